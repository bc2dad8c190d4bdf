"""The store itself, stream state and its history, checkpoint counters."""

from __future__ import annotations

import itertools
import sqlite3
import threading
from pathlib import Path

import pytest

import headwater.metadata_store as metadata_store
from headwater.errors import MetadataStoreError
from headwater.metadata_store import FIRST_CHECKPOINT_INDEX, SCHEMA_VERSION, MetadataStore


def test_all_matches_public_names() -> None:
    public = {
        name
        for name, value in vars(metadata_store).items()
        if not name.startswith("_")
        and getattr(value, "__module__", "") != "builtins"
        and not isinstance(value, type(metadata_store))
    }
    assert set(metadata_store.__all__) == public


def test_default_url_creates_the_folder_and_keeps_the_store_id(tmp_path: Path) -> None:
    url = MetadataStore.default_url(tmp_path)
    assert url == f"sqlite:///{tmp_path.resolve()}/.headwater/headwater.db"
    first = MetadataStore(url)
    assert (tmp_path / ".headwater" / "headwater.db").is_file()
    again = MetadataStore(url)
    assert again.store_id == first.store_id
    other = MetadataStore(MetadataStore.default_url(tmp_path / "elsewhere"))
    assert other.store_id != first.store_id


def test_schema_version_is_stored_and_a_newer_one_is_refused(tmp_path: Path) -> None:
    MetadataStore(MetadataStore.default_url(tmp_path)).close()
    db = tmp_path / ".headwater" / "headwater.db"
    with sqlite3.connect(db) as conn:
        (version,) = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        assert version == str(SCHEMA_VERSION)
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(MetadataStoreError, match="schema version 99"):
        MetadataStore(MetadataStore.default_url(tmp_path))


def test_in_memory_sqlite_is_refused() -> None:
    with pytest.raises(MetadataStoreError, match="SQLite file"):
        MetadataStore("sqlite://")


def test_unreachable_postgres_is_a_metadata_store_error_without_the_password() -> None:
    with pytest.raises(MetadataStoreError) as info:
        MetadataStore("postgresql://hw:s3cr3t@127.0.0.1:1/headwater")
    assert "s3cr3t" not in str(info.value)


def test_save_state_upserts_and_keeps_history(store: MetadataStore) -> None:
    assert store.get_state("c", "orders") is None
    store.save_state("c", "orders", {"cursor": "2024-01-01"}, run_id="r1", checkpoint_index=3)
    store.save_state("c", "orders", {"cursor": "2024-02-01"}, run_id="r1", checkpoint_index=4)
    store.save_state("c", "users", {"cursor": 7}, run_id="r1", checkpoint_index=1)
    store.save_state("other", "orders", {"cursor": "x"}, run_id="r9", checkpoint_index=1)

    assert store.get_state("c", "orders") == {"cursor": "2024-02-01"}
    assert store.get_states("c") == {"orders": {"cursor": "2024-02-01"}, "users": {"cursor": 7}}

    history = store.state_history("c", "orders")
    assert [(h.state, h.checkpoint_index) for h in history] == [
        ({"cursor": "2024-02-01"}, 4),
        ({"cursor": "2024-01-01"}, 3),
    ]
    assert all(h.run_id == "r1" and h.saved_at.tzinfo is not None for h in history)
    assert len(store.state_history("c")) == 3


def test_state_never_moves_back_to_a_lower_checkpoint(store: MetadataStore) -> None:
    store.save_state("c", "orders", {"cursor": 5}, run_id="r1", checkpoint_index=5)
    store.save_state("c", "orders", {"cursor": 5}, run_id="r1", checkpoint_index=5)  # retried
    with pytest.raises(MetadataStoreError, match="move back from checkpoint 5 to 4"):
        store.save_state("c", "orders", {"cursor": 4}, run_id="r1", checkpoint_index=4)
    assert store.get_state("c", "orders") == {"cursor": 5}
    # An imported state (no checkpoint) is always accepted.
    store.save_state("c", "orders", {"cursor": 1}, run_id=None, checkpoint_index=None)
    assert store.get_state("c", "orders") == {"cursor": 1}


def test_reset_state_of_some_or_all_streams(store: MetadataStore) -> None:
    for stream in ("a", "b", "c"):
        store.save_state("conn", stream, {"n": 1}, run_id="r", checkpoint_index=1)
    store.save_state("keep", "a", {"n": 1}, run_id="r", checkpoint_index=1)

    assert store.reset_state("conn", ["b", "missing"]) == ["b"]
    assert set(store.get_states("conn")) == {"a", "c"}
    assert store.state_history("conn", "b")[0].state is None

    assert store.reset_state("conn") == ["a", "c"]
    assert store.get_states("conn") == {}
    assert store.reset_state("conn") == []
    assert store.get_states("keep") == {"a": {"n": 1}}


def test_non_json_state_is_refused_and_nothing_is_written(store: MetadataStore) -> None:
    with pytest.raises(MetadataStoreError):
        store.save_state("c", "s", {"bad": {1, 2}}, run_id="r", checkpoint_index=1)
    with pytest.raises(MetadataStoreError):
        store.save_state("c", "s", {"nan": float("nan")}, run_id="r", checkpoint_index=1)
    assert store.get_state("c", "s") is None
    assert store.state_history("c", "s") == []


def test_checkpoint_indices_are_contiguous_blocks_that_survive_a_reset(
    store: MetadataStore,
) -> None:
    assert store.allocate_checkpoint_indices("c", "orders", 3) == FIRST_CHECKPOINT_INDEX
    assert store.allocate_checkpoint_indices("c", "orders", 2) == FIRST_CHECKPOINT_INDEX + 3
    assert store.allocate_checkpoint_indices("c", "users", 1) == FIRST_CHECKPOINT_INDEX
    store.reset_state("c")
    assert store.allocate_checkpoint_indices("c", "orders", 1) == FIRST_CHECKPOINT_INDEX + 5
    with pytest.raises(ValueError):
        store.allocate_checkpoint_indices("c", "orders", 0)


def test_checkpoint_indices_never_overlap_across_threads_and_stores(store_url: str) -> None:
    stores = [MetadataStore(store_url), MetadataStore(store_url)]
    blocks: list[tuple[int, int]] = []
    guard = threading.Lock()

    def allocate(store: MetadataStore) -> None:
        for _ in range(40):
            first = store.allocate_checkpoint_indices("c", "orders", 3)
            with guard:
                blocks.append((first, first + 3))

    threads = [threading.Thread(target=allocate, args=(s,)) for s in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    blocks.sort()
    assert len(blocks) == 80
    assert blocks[0][0] == FIRST_CHECKPOINT_INDEX
    for (_, end), (start, _) in itertools.pairwise(blocks):
        assert start == end


def test_realigning_a_counter_moves_it_past_a_taken_index_and_never_back(
    store: MetadataStore,
) -> None:
    # A stream the store never counted (a store restored from before its first sync).
    assert store.checkpoint_counter("c", "orders") is None
    assert store.realign_checkpoint_indices("c", "orders", 7) == (None, 8)
    assert store.allocate_checkpoint_indices("c", "orders", 2) == 8
    assert store.checkpoint_counter("c", "orders") == 10
    # Already past the table's index: unchanged.
    assert store.realign_checkpoint_indices("c", "orders", 5) == (10, 10)
    assert store.realign_checkpoint_indices("c", "orders", 12) == (10, 13)
    assert store.allocate_checkpoint_indices("c", "orders", 1) == 13
