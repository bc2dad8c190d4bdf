"""The object-storage tests' stores: the GCS emulator and Azurite (``gcs_server`` and
``azure_server``) and the S3-compatible server (moto) are the whole run's, shared with
every integration test folder (tests/integration/conftest.py); their names stay
importable from here."""

from __future__ import annotations

from tests.integration._s3 import ACCESS_KEY, SECRET_KEY, S3Server
from tests.integration._stores import (
    AZURE_ACCOUNT,
    AZURE_KEY,
    GCS_TOKEN,
    AzureServer,
    GcsServer,
)

__all__ = ["ACCESS_KEY", "AZURE_ACCOUNT", "AZURE_KEY", "GCS_TOKEN", "SECRET_KEY", "AzureServer",
           "GcsServer", "S3Server"]
