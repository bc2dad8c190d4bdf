"""Which partitions ``headwater verify`` takes from the run history: a real SQLite metadata
store holding syncs, a backfill, a failed run and an overwrite staged then published."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

from headwater.metadata_store import MetadataStore
from headwater.operations._verify_windows import run_partitions
from headwater.plan import CheckpointPlan, ConfiguredStream, RunPlan, StreamPlan
from headwater.sdk import Partition
from headwater.sync_modes import DestinationSyncMode, SyncMode

APPEND = DestinationSyncMode.APPEND_DEDUP


def _run(store: MetadataStore, name: str, *, kind: str = "sync", status: str = "succeeded",
         committed: tuple[bool, ...] = (True,), staged: bool = False,
         published: bool = True) -> str:
    """A finished run of stream ``s``: one partition ``name/i`` per checkpoint ``i``."""
    configured = ConfiguredStream("s", SyncMode.INCREMENTAL, APPEND, "updated_at", ("id",))
    checkpoints = tuple(CheckpointPlan(i, f"c{i}", 0, (Partition("s", f"{name}/{i}"),))
                        for i in range(len(committed)))
    plan = RunPlan("c", (StreamPlan(configured, None, 1, checkpoints),), purpose=kind)
    run_id = store.create_run("c", plan=plan.to_dict(), state_before={}, config_redacted={},
                              kind=kind)
    for i, done in enumerate(committed):
        stats = {"staged": True, **({"published": True} if published else {})} \
            if staged else {}
        store.record_checkpoint(run_id, "s", i, f"c{i}",
                                status="committed" if done else "failed", stats=stats)
    store.finish_run(run_id, status=status, stats={}, state_after={}, error=None)  # type: ignore[arg-type]
    time.sleep(0.002)  # runs are ordered by their start
    return run_id


def _ids(partitions: list[Partition]) -> list[str]:
    return [p.id for p in partitions]


def test_the_last_syncs_committed_partitions(tmp_path: Path) -> None:
    store = MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}")
    _run(store, "one", committed=(True, True))
    middle = datetime.now(UTC)
    _run(store, "two", committed=(True, False))  # the second checkpoint never committed
    _run(store, "failed", status="failed")
    _run(store, "backfill", kind="backfill")  # a repair: not a window of its own
    assert _ids(run_partitions(store, "c", "s", mode=APPEND)) == ["two/0"]
    assert _ids(run_partitions(store, "c", "s", mode=APPEND, runs=2)) == \
        ["one/0", "one/1", "two/0"]
    assert _ids(run_partitions(store, "c", "s", mode=APPEND, since=middle)) == ["two/0"]
    assert _ids(run_partitions(store, "c", "other", mode=APPEND)) == []


def test_an_overwrite_counts_its_last_published_run_only(tmp_path: Path) -> None:
    store = MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}")
    _run(store, "first", committed=(True, True), staged=True)
    _run(store, "unpublished", committed=(True,), staged=True, published=False)
    overwrite = DestinationSyncMode.OVERWRITE
    assert _ids(run_partitions(store, "c", "s", mode=overwrite, runs=5)) == \
        ["first/0", "first/1"]
