"""A store opened to be read (the page, ``/metrics``): it creates nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater.errors import MetadataStoreError
from headwater.metadata_store import MetadataStore


def test_a_store_opened_to_read_creates_nothing(tmp_path: Path) -> None:
    """Issue 39: the page opened a missing default store, which created an empty SQLite file
    and read it as a healthy store with no runs."""
    path = tmp_path / "nowhere" / "headwater.db"
    reader = MetadataStore(f"sqlite:///{path}", create=False)
    assert reader.missing
    with pytest.raises(MetadataStoreError, match="no such file"):
        reader.list_runs("shop")
    assert not path.parent.exists()
    MetadataStore(f"sqlite:///{path}").close()  # a sync creates it
    assert not reader.missing and reader.list_runs("shop") == []
    assert reader.store_id
