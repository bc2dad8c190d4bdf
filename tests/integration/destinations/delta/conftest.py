"""Fixtures of the Delta destination's integration tests: a recording proxy to S3."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration._s3 import S3Server
from tests.integration.destinations.delta._s3 import Proxy, start_proxy


@pytest.fixture
def s3_proxy(s3_server: S3Server) -> Iterator[Proxy]:
    """A recording proxy in front of the run's S3 server, for one test."""
    proxy, stop = start_proxy(s3_server.endpoint)
    try:
        yield proxy
    finally:
        stop()
