"""The GCS emulator and Azurite as the integration tests reach them (the fixtures
``gcs_server`` and ``azure_server`` are in tests/integration/conftest.py: one of each per
test run, for the object-storage source's tests and the Delta destination's alike)."""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass
from typing import Any

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

    @property
    def blob_endpoint(self) -> str:
        """The blob service's URL (``http://127.0.0.1:PORT/ACCOUNT``)."""
        parts = dict(p.split("=", 1) for p in self.connection_string.split(";") if p)
        return parts["BlobEndpoint"].rstrip("/")

    def container(self, name: str) -> str:
        """Create the container ``name`` (lowercase, 3 to 63 characters); its name."""
        from azure.storage.blob import BlobServiceClient

        BlobServiceClient.from_connection_string(self.connection_string).create_container(name)
        return name
