"""Fixtures every integration test folder may use, one of each per test run: an
S3-compatible server, a GCS emulator, Azurite and a Spark standalone cluster (master
and two workers); and per module, its CLI scenarios run two at a time (``cases``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.integration._cluster import StandaloneCluster, standalone_cluster
from tests.integration._s3 import S3Server, free_port, moto_server
from tests.integration._side_by_side import SideBySide, side_by_side
from tests.integration._stores import AZURE_ACCOUNT, AZURE_KEY, AzureServer, GcsServer
from tests.integration.connectors.object_storage._azurite import azurite


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """moto's S3 (and SQS) server in a process of its own (see ``_s3``), for the whole run."""
    with moto_server(tmp_path_factory.mktemp("moto") / "moto.log") as server:
        yield server


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """One master and two workers for the whole run (three JVMs are slow to start);
    tests tell their applications apart by name (``headwater-<connection>``)."""
    with standalone_cluster(tmp_path_factory.mktemp("cluster")) as running:
        yield running


@pytest.fixture(scope="session")
def gcs_server() -> Iterator[GcsServer]:
    """gcp-storage-emulator in a thread of the test process, in memory."""
    from gcp_storage_emulator.server import create_server

    port = free_port()
    server = create_server("127.0.0.1", port, in_memory=True)
    server.start()
    try:
        yield GcsServer(endpoint=f"http://127.0.0.1:{port}")
    finally:
        server.stop()


@pytest.fixture(scope="session")
def azure_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AzureServer]:
    """Azurite (installed by scripts/setup-tests) in a process of its own."""
    folder = tmp_path_factory.mktemp("azurite")
    with azurite(AZURE_ACCOUNT, AZURE_KEY, free_port(), folder) as endpoint:
        yield AzureServer(connection_string=(
            f"DefaultEndpointsProtocol=http;AccountName={AZURE_ACCOUNT};"
            f"AccountKey={AZURE_KEY};BlobEndpoint={endpoint};"))


@pytest.fixture(scope="module")
def cases(request: pytest.FixtureRequest, spark: Any,
          tmp_path_factory: pytest.TempPathFactory) -> SideBySide:
    """The module's side-by-side cases, named by its ``SCENARIOS`` (see ``_side_by_side``)."""
    return side_by_side(request, spark, tmp_path_factory, request.module.SCENARIOS)
