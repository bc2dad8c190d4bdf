"""Fixtures every integration test folder may use, one of each per test run: an
S3-compatible server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration._s3 import S3Server, moto_server


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """moto's S3 (and SQS) server in a process of its own (see ``_s3``), for the whole run."""
    with moto_server(tmp_path_factory.mktemp("moto") / "moto.log") as server:
        yield server
