"""The ``store`` fixture of the metadata store's tests, on whatever ``store_url`` names.

``tests/unit/metadata_store/conftest.py`` pairs it with a fresh SQLite file;
``tests/integration/metadata_store/test_metadata_store_postgres.py``, which
imports the unit tests to run them again on PostgreSQL, with a fresh database
on the test server (pytest resolves ``store_url`` where the test is collected).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from headwater.metadata_store import MetadataStore


@pytest.fixture
def store(store_url: str) -> Iterator[MetadataStore]:
    """A store on ``store_url``, closed after the test."""
    store = MetadataStore(store_url)
    yield store
    store.close()
