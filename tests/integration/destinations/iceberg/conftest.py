"""The Iceberg destination's catalog servers (one per test session) and its `config` fixture."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# A new bucket the session's s3a:// reaches (per-bucket S3A settings): the Delta tests' fixture.
from tests.integration.destinations.delta.conftest import s3_bucket  # noqa: F401
from tests.integration.destinations.iceberg._catalogs import CATALOG_KINDS, catalog_config
from tests.integration.destinations.iceberg._rest_catalog import (
    RestCatalogServer,
    rest_catalog_server,
)


@pytest.fixture(scope="session")
def iceberg_rest_catalog(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestCatalogServer]:
    """Apache Iceberg's REST catalog server on 127.0.0.1 (SQLite backend, a file:// warehouse).

    Shared by the session: each test keeps to a namespace of its own.
    """
    with rest_catalog_server(tmp_path_factory.mktemp("iceberg-rest")) as server:
        yield server


@pytest.fixture(params=CATALOG_KINDS)
def config(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """The destination's config on one catalog kind (servers started only when asked for)."""
    with catalog_config(request.param, tmp_path, request) as config:
        yield config
