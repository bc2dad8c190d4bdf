"""Fixtures of the Delta destination's integration tests: an S3-compatible server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.destinations.delta._s3 import Proxy, S3Server, moto_server, start_proxy


@pytest.fixture(scope="session")
def delta_s3() -> Iterator[S3Server]:
    """moto's S3 server on 127.0.0.1 for the whole session."""
    yield from moto_server()


@pytest.fixture
def s3_proxy(delta_s3: S3Server) -> Iterator[Proxy]:
    """A recording proxy in front of the session's S3 server, for one test."""
    proxy, stop = start_proxy(delta_s3.endpoint)
    try:
        yield proxy
    finally:
        stop()
