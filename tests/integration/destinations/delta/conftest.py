"""Fixtures of the Delta destination's integration tests: a bucket Spark reaches, a proxy to S3."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration._s3 import S3Server, free_port
from tests.integration._stores import AzureServer
from tests.integration.destinations.delta._s3 import hadoop_settings, new_bucket
from tests.integration.destinations.delta._s3_proxy import Proxy, proxy_process
from tests.integration.destinations.delta._tables import (
    azure_settings,
    new_container,
    session_settings,
)


@pytest.fixture
def s3_proxy(s3_server: S3Server) -> Iterator[Proxy]:
    """A recording proxy in front of the run's S3 server, for one test."""
    with proxy_process(s3_server.endpoint, free_port()) as proxy:
        yield proxy


@pytest.fixture
def s3_bucket(spark: Any, s3_server: S3Server) -> Iterator[str]:
    """A new bucket that the session's ``s3a://`` reaches (per-bucket S3A settings,
    so no other test's bucket changes); its settings are unset afterwards."""
    bucket = new_bucket(s3_server)
    with session_settings(spark, hadoop_settings(s3_server, bucket)):
        yield bucket


@pytest.fixture
def azure_container(spark: Any, azure_server: AzureServer) -> Iterator[str]:
    """A new Azurite container the session reaches (the account's key and the emulator's
    endpoint, as a user sets them for Spark's ABFS); the settings are unset afterwards."""
    container = new_container(azure_server)
    with session_settings(spark, azure_settings(azure_server)):
        yield container
