"""The files destination's manifests: written whole, never replaced, read by the rule.

No Spark: the log is driven as the destination's commits drive it, on a real local
folder, and the table is read back by ``read_table`` (pyarrow alone)."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from headwater.destinations._table_files._create import create_text
from headwater.destinations._table_files._store import TableFolder
from headwater.destinations.files import read_table
from headwater.destinations.files._manifests import (
    ListedFile,
    Log,
    Manifest,
    current,
    manifest_name,
    without_checkpoints,
)

SCHEMA = pa.schema([("id", pa.int64())])


def _log(folder: Path) -> Log:
    place = TableFolder(str(folder))

    def names() -> list[str]:
        return [name for name, _, _ in place.list_files("_manifests")]

    return Log(names, place.read_text, lambda rel, text: create_text(place, rel, text))


def _commit(folder: Path, version: int, ids: list[int], *, replace: bool = False,
            app_id: str = "headwater/s/c/orders/0", run_id: str = "run-1") -> Manifest:
    """Write one data file of ``ids`` and the manifest (not logged) listing it."""
    name = f"part-{version}-{len(ids)}.parquet"
    pq.write_table(pa.table({"id": ids}, schema=SCHEMA), folder / name)
    return Manifest(files=(ListedFile(name, len(ids), (folder / name).stat().st_size),),
                    marker={"app_id": app_id, "version": version, "run_id": run_id,
                            "stream": "orders", "checkpoint": version},
                    tag="{}", format="parquet", compression="snappy", schema=SCHEMA,
                    replace=replace)


def _ids(root: Path) -> list[int]:
    return sorted(read_table(str(root), "orders").column("id").to_pylist())


def test_a_manifest_round_trips_through_its_json(tmp_path: Path) -> None:
    manifest = _commit(tmp_path, 3, [1, 2])
    again = Manifest.from_json(manifest.to_json())
    assert again == manifest
    assert again.schema.equals(SCHEMA)


def test_the_atomic_create_refuses_a_name_that_is_taken(tmp_path: Path) -> None:
    place = TableFolder(str(tmp_path))
    assert create_text(place, "_manifests/00000000000000000000.json", "first")
    assert not create_text(place, "_manifests/00000000000000000000.json", "second")
    assert (tmp_path / "_manifests" / "00000000000000000000.json").read_text() == "first"
    # No temporary file is left behind by either create.
    assert os.listdir(tmp_path / "_manifests") == ["00000000000000000000.json"]


def test_a_retried_commit_is_logged_once(tmp_path: Path) -> None:
    table = tmp_path / "orders"
    table.mkdir()
    log = _log(table)
    logged, created = log.append(_commit(table, 1, [1, 2]))
    assert (created, logged.sequence) == (True, 0)
    # The same marker again (a retried checkpoint, its files written anew): nothing logged.
    again, created = log.append(_commit(table, 1, [1, 2]))
    assert (created, again.sequence) == (False, 0)
    # A second writer that has not seen the log yet (its own empty cache) finds it too.
    other, created = _log(table).append(_commit(table, 1, [1, 2]))
    assert (created, other.sequence) == (False, 0)
    assert [m.sequence for m in log.manifests()] == [0]
    assert _ids(tmp_path) == [1, 2]


def test_a_writer_that_loses_the_race_for_a_number_takes_the_next(tmp_path: Path) -> None:
    table = tmp_path / "orders"
    table.mkdir()
    first, second = _log(table), _log(table)
    first.append(_commit(table, 1, [1]))
    # ``second`` read the log before ``first`` wrote, so it tries number 0: refused.
    names = iter([[], ["00000000000000000000.json"], ["00000000000000000000.json"]])
    stale = Log(lambda: next(names), TableFolder(str(table)).read_text,
                lambda rel, text: create_text(TableFolder(str(table)), rel, text))
    logged, created = stale.append(_commit(table, 2, [2]))
    assert (created, logged.sequence) == (True, 1)
    assert [m.sequence for m in second.manifests()] == [0, 1]
    assert Manifest.from_json((table / manifest_name(0)).read_text()).marker["version"] == 1


def test_after_an_overwrite_the_table_is_its_files_and_what_came_after(tmp_path: Path) -> None:
    table = tmp_path / "orders"
    table.mkdir()
    log = _log(table)
    log.append(_commit(table, 1, [1, 2]))
    log.append(_commit(table, 2, [3]))
    assert _ids(tmp_path) == [1, 2, 3]
    log.append(_commit(table, 3, [10, 11], replace=True))
    assert _ids(tmp_path) == [10, 11]
    log.append(_commit(table, 4, [12]))
    assert _ids(tmp_path) == [10, 11, 12]
    assert [m.sequence for m in current(log.manifests())] == [2, 3]
    # A file no manifest names (a killed task's) is never read.
    pq.write_table(pa.table({"id": [99]}, schema=SCHEMA), table / "part-stray.parquet")
    assert _ids(tmp_path) == [10, 11, 12]


def test_a_failed_checkpoints_commit_is_left_out_by_a_replacing_manifest(
        tmp_path: Path) -> None:
    """Another run's commit of the same index stays; one of another schema is refused."""
    table = tmp_path / "orders"
    table.mkdir()
    log = _log(table)
    log.append(_commit(table, 1, [1, 2]))
    log.append(_commit(table, 2, [3], run_id="run-2"))
    log.append(_commit(table, 3, [4, 5, 6], run_id="run-2"))
    assert without_checkpoints(log.manifests(), "run-2", {4}) is None
    found = without_checkpoints(log.manifests(), "run-2", {1, 3})
    assert found is not None
    manifest, deleted = found
    assert deleted == 3  # run-2's checkpoint 3; checkpoint 1 is run-1's
    log.append(manifest)
    assert _ids(tmp_path) == [1, 2, 3]
    assert without_checkpoints(log.manifests(), "run-2", {3}) is None  # done already

    # A column the stream gained later: the older files read with it as null.
    wider = pa.schema([("id", pa.int64()), ("name", pa.string())])
    log.append(replace(_commit(table, 4, [7], run_id="run-3"), schema=wider))
    log.append(_commit(table, 5, [8], run_id="run-3"))
    found = without_checkpoints(log.manifests(), "run-3", {5})
    assert found is not None and found[0].schema.equals(wider)
    log.append(found[0])
    assert _ids(tmp_path) == [1, 2, 3, 7]
    assert read_table(str(tmp_path), "orders").column("name").null_count == 4
    # The newest kept manifest lacks a column older ones have: they would not read right.
    log.append(_commit(table, 6, [9], run_id="run-4"))
    log.append(_commit(table, 7, [10], run_id="run-4"))
    with pytest.raises(ValueError, match="more than one schema"):
        without_checkpoints(log.manifests(), "run-4", {7})


def test_nothing_committed_reads_as_an_empty_table(tmp_path: Path) -> None:
    assert read_table(str(tmp_path), "orders").num_columns == 0


def test_a_document_that_is_not_a_manifest_is_refused() -> None:
    with pytest.raises(ValueError, match="not a version-1 files manifest"):
        Manifest.from_json('{"files": []}')
