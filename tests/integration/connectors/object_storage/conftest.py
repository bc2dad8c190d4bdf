"""Real object stores on 127.0.0.1, each for the whole session: a GCS emulator
(gcp-storage-emulator) and Azurite; the S3-compatible server (moto) is shared by every
integration test folder (tests/integration/conftest.py)."""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.integration._s3 import ACCESS_KEY, SECRET_KEY, S3Server, free_port
from tests.integration.connectors.object_storage._azurite import azurite

# The S3 server itself is the whole run's (``s3_server`` in tests/integration/conftest.py);
# its names stay importable from here.
__all__ = ["ACCESS_KEY", "SECRET_KEY", "S3Server"]

#: gcsfs sends a raw OAuth token as a bearer token; by default it first asks Google's
#: tokeninfo endpoint for the token's expiry, which a test on loopback cannot reach.
#: Set before the suite's Spark starts, so its Python workers inherit it too.
os.environ.setdefault("FETCH_RAW_TOKEN_EXPIRY", "false")
GCS_TOKEN = "ya29.hw-test-gcs-token-do-not-print"
AZURE_ACCOUNT = "hwtest"
AZURE_KEY = base64.b64encode(b"hw-test-azure-account-key-do-not-print").decode()


@dataclass(frozen=True)
class GcsServer:
    """The GCS emulator: a JSON-API endpoint that accepts any bearer token."""

    endpoint: str

    def filesystem(self) -> Any:
        from gcsfs.core import GCSFileSystem

        return GCSFileSystem(endpoint_url=self.endpoint, token="anon", skip_instance_cache=True)

    def source_config(self, bucket: str, **extra: Any) -> dict[str, Any]:
        return {"url": f"gs://{bucket}", "endpoint_url": self.endpoint, "gcs_token": GCS_TOKEN,
                **extra}


@dataclass(frozen=True)
class AzureServer:
    """Azurite's blob service with one account, reached by a connection string."""

    connection_string: str

    def filesystem(self) -> Any:
        from adlfs import AzureBlobFileSystem

        return AzureBlobFileSystem(connection_string=self.connection_string,
                                   skip_instance_cache=True)

    def source_config(self, container: str, **extra: Any) -> dict[str, Any]:
        return {"url": f"az://{container}", "azure_connection_string": self.connection_string,
                **extra}


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
