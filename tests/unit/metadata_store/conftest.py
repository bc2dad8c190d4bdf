"""The store every test of this folder uses: a fresh SQLite file in the test's folder.

``tests/integration/metadata_store/test_metadata_store_postgres.py`` imports
many of these tests to run them again on PostgreSQL: its own ``store_url`` and
``store`` fixtures (a fresh database) replace these there, so a test here asks
for ``store`` (or ``store_url``, for a second store on the same database) and
never builds its own from ``tmp_path``, or it would stay on SQLite.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from headwater.metadata_store import MetadataStore


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return MetadataStore.default_url(tmp_path)


@pytest.fixture
def store(store_url: str) -> Iterator[MetadataStore]:
    store = MetadataStore(store_url)
    yield store
    store.close()
