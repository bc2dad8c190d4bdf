"""A full refresh of several checkpoints into Iceberg: staged on a branch, published once.

Real Spark, real PyIceberg, one partition per checkpoint (six or seven
checkpoints), on every catalog kind (``_catalogs.py``): the staging branch, its
publish and its drop are ref operations each catalog commits its own way.
Readers of ``main`` must see the old rows until the one ``overwrite`` snapshot
that publishes the run; a killed attempt's staged checkpoints are found again,
never staged twice, and a publish that landed before the kill is found by its
tag, never made twice.  The table is read back with PyIceberg's own calls,
through a catalog client of the test's own, not the destination's.
(Killed CLI processes: ``tests/integration/test_crash_resume.py``.)
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from headwater.config import load_connection
from headwater.destinations.iceberg import IcebergDestination
from headwater.errors import DestinationError
from headwater.metadata_store import MetadataStore
from tests.integration._connections import sync
from tests.integration.destinations.iceberg.test_iceberg_syncs import (
    OVERWRITE,
    Killed,
    expected,
    keyed,
    read,
    table_of,
    write_connection,
)

pytestmark = pytest.mark.spark


def _table(path: Path) -> Any:
    return table_of(path)


def _tags(snapshots: Any) -> list[dict[str, Any]]:
    """The ``headwater`` part of each snapshot's tag (snapshots without one left out)."""
    found = []
    for snapshot in snapshots:
        assert snapshot.summary is not None
        tag = snapshot.summary.additional_properties.get("headwater.tag")
        if tag:
            found.append(json.loads(tag)["headwater"])
    return found


def _on_main(path: Path) -> list[dict[str, Any]]:
    """The tags of the snapshots readers of ``main`` have seen, newest first."""
    from pyiceberg.table.snapshots import ancestors_of

    table = _table(path)
    return _tags(ancestors_of(table.current_snapshot(), table.metadata))


def assert_published_once(path: Path, run_id: str) -> None:
    """One publish of the run on ``main`` listing its every checkpoint; each checkpoint
    staged by exactly one snapshot, none of them on ``main``; no branch left."""
    table = _table(path)
    store = MetadataStore(load_connection(path).metadata_store or "")
    run = store.get_run(run_id)
    assert run is not None
    planned = sorted(c["index"] for c in run.plan["streams"][0]["checkpoints"])
    assert len(planned) > 1
    ours = [t for t in _on_main(path) if t["run_id"] == run_id]
    assert ours == [{"run_id": run_id, "stream": "users", "published": planned}]
    staged = Counter(t["checkpoint"] for t in _tags(table.snapshots())
                     if t["run_id"] == run_id and "checkpoint" in t)
    assert staged == Counter(planned), staged
    assert set(table.metadata.refs) == {"main"}


def _files_on_disk(path: Path) -> set[str]:
    table = _table(path)
    return {p.name for p in (Path(table.location().removeprefix("file://")) / "data")
            .glob("*.parquet")}


def _files_referenced(path: Path) -> set[str]:
    """Every data file some snapshot of the table (on any branch, expired or not) holds."""
    table = _table(path)
    names = set()
    for snapshot in table.snapshots():
        for manifest in snapshot.manifests(table.io):
            names.update(Path(e.data_file.file_path).name
                         for e in manifest.fetch_manifest_entry(table.io, discard_deleted=False))
    return names


def test_an_overwrite_of_several_checkpoints_is_published_in_one_snapshot(
        spark: Any, tmp_path: Path, config: dict[str, Any]) -> None:
    first = sync(write_connection(tmp_path, OVERWRITE, per_checkpoint=1, destination=config))
    path = write_connection(tmp_path, OVERWRITE, per_checkpoint=1, generation=1,
                            destination=config)
    second = sync(path)
    rows = read(path)
    assert keyed(rows) == keyed(expected(generation=1))
    assert set(rows.column("_hw_run_id").to_pylist()) == {second.run_id}
    for run in (first, second):
        assert_published_once(path, run.run_id)
    # Only publishes are on main: one per run, each an overwrite, each holding the lane's version.
    table = _table(path)
    assert [t.get("published") is not None for t in _on_main(path)] == [True, True]
    assert table.current_snapshot().summary.operation.value == "overwrite"
    publish_lanes = {k: v for k, v in table.properties.items()
                     if k.startswith("headwater.txn.") and k.endswith("/publish")}
    assert list(publish_lanes.values()) == [str(max(
        c.index for c in MetadataStore(load_connection(path).metadata_store or "")
        .list_checkpoints(second.run_id)))]
    # runs show: staged checkpoints have no snapshot id; the last one carries the publish's.
    store = MetadataStore(load_connection(path).metadata_store or "")
    records = sorted(store.list_checkpoints(second.run_id), key=lambda c: c.index)
    assert all(c.stats["staged"] for c in records)
    assert [c.stats["iceberg_snapshot_id"] for c in records] == \
        [None] * (len(records) - 1) + [second.streams[0].published_version]
    assert second.streams[0].published_version == table.current_snapshot().snapshot_id


class DiesWhileStaging(IcebergDestination):
    """Its second staged checkpoint lands, then the process "dies"."""

    staged = 0

    def stage_files(self, *args: Any, **kwargs: Any) -> Any:
        result = super().stage_files(*args, **kwargs)
        self.staged += 1  # this instance's count (tests run it on every catalog)
        if self.staged == 2:
            raise Killed
        return result


class DiesAfterPublishing(IcebergDestination):
    """Its publish lands, then the process "dies" before the engine hears of it."""

    def publish(self, *args: Any, **kwargs: Any) -> Any:
        super().publish(*args, **kwargs)
        raise Killed


def test_a_killed_overwrite_keeps_the_old_rows_then_publishes_once(
        spark: Any, tmp_path: Path, config: dict[str, Any]) -> None:
    sync(write_connection(tmp_path, OVERWRITE, per_checkpoint=1, destination=config))
    path = write_connection(tmp_path, OVERWRITE, per_checkpoint=1, generation=1,
                            destination=config)

    with pytest.raises(Killed):
        sync(path, DiesWhileStaging(config))
    assert keyed(read(path)) == keyed(expected())  # readers still see the old rows
    [branch] = [name for name in _table(path).metadata.refs if name != "main"]
    assert branch.startswith("headwater-staging-")
    run_id = branch.removeprefix("headwater-staging-")
    assert all("published" not in t for t in _on_main(path) if t["run_id"] == run_id)

    with pytest.raises(Killed):  # resumed: the rest staged, published, then "killed"
        sync(path, DiesAfterPublishing(config))
    assert keyed(read(path)) == keyed(expected(generation=1))

    again = sync(path, IcebergDestination(config))
    assert (again.run_id, again.attempt) == (run_id, 3), again.to_dict()
    assert keyed(read(path)) == keyed(expected(generation=1))
    assert_published_once(path, run_id)
    store = MetadataStore(load_connection(path).metadata_store or "")
    records = {c.index: c.stats for c in store.list_checkpoints(run_id)}
    assert sum(s["records_written"] for s in records.values()) == expected(generation=1).num_rows
    # The files the killed attempts' tasks wrote again were removed, none left unreferenced.
    assert _files_on_disk(path) <= _files_referenced(path)


class FailsThirdStage(IcebergDestination):
    """Stages two checkpoints, then fails the third (the run fails; it is never resumed)."""

    staged = 0

    def stage_files(self, *args: Any, **kwargs: Any) -> Any:
        self.staged += 1
        if self.staged == 3:
            raise DestinationError("the test's third staging fails", stream="users")
        return super().stage_files(*args, **kwargs)


def test_a_failed_overwrite_keeps_the_old_rows_and_the_next_drops_its_staging(
        spark: Any, tmp_path: Path, config: dict[str, Any]) -> None:
    sync(write_connection(tmp_path, OVERWRITE, per_checkpoint=1, destination=config))
    path = write_connection(tmp_path, OVERWRITE, per_checkpoint=1, generation=1,
                            destination=config)
    failed = sync(path, FailsThirdStage(config), expect="failed")
    assert keyed(read(path)) == keyed(expected())
    branch = f"headwater-staging-{failed.run_id}"
    table = _table(path)
    assert branch in table.metadata.refs
    staged_files = {Path(f).name for f in table.inspect.files(
        snapshot_id=table.metadata.refs[branch].snapshot_id).column("file_path").to_pylist()}
    assert len(staged_files) >= 2 and staged_files <= _files_on_disk(path)

    again = sync(path)
    assert again.run_id != failed.run_id, again.to_dict()
    assert keyed(read(path)) == keyed(expected(generation=1))
    assert_published_once(path, again.run_id)
    table = _table(path)
    assert not staged_files & _files_on_disk(path)  # the failed run's files are gone
    assert not [t for t in _tags(table.snapshots()) if t["run_id"] == failed.run_id]
