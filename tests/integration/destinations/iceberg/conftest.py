"""The Iceberg destination's catalog servers, one per test session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

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
