"""The store every test of this folder uses: a fresh SQLite file in the test's folder.

``tests/integration/metadata_store/test_metadata_store_postgres.py`` imports
many of these tests to run them again on PostgreSQL: its own ``store_url`` (a
fresh database) replaces this one there, so a test here asks for ``store`` (or
``store_url``, for a second store on the same database) and never builds its
own from ``tmp_path``, or it would stay on SQLite.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater.metadata_store import MetadataStore
from tests._stores import store  # noqa: F401  (the fixture, on this folder's store_url)


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return MetadataStore.default_url(tmp_path)
