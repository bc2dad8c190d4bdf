"""Copy-on-write commits (``_rewrite.commit_rewrite``) on a real SQLite catalog, without Spark.

A rewrite computed against a snapshot another writer moved past must not be
committed: it is computed again, and the files of the stale one are deleted.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from headwater.destinations import _merge_rule
from headwater.destinations.iceberg import _catalog, _commit, _rewrite
from headwater.destinations.iceberg._config import resolve
from headwater.errors import DestinationError

SCHEMA = pa.schema([pa.field("_hw_run_id", pa.string()), pa.field("id", pa.int64())])


def _table(tmp_path: Path) -> Any:
    catalog = _catalog.load(resolve({"warehouse": str(tmp_path / "warehouse")}))
    _catalog.ensure_namespace(catalog, "headwater")
    return catalog, _catalog.with_name_mapping(catalog.create_table("headwater.t", schema=SCHEMA))


def _file(table: Any, run: str, ids: list[int]) -> str:
    folder = Path(table.location().removeprefix("file://")) / "data"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{uuid.uuid4()}.parquet"
    pq.write_table(pa.table({"_hw_run_id": [run] * len(ids), "id": ids}, schema=SCHEMA), path)
    return f"file://{path}"


def _append(table: Any, paths: list[str]) -> None:
    _commit.commit(table, _commit.data_files(table, paths), overwrite=False, summary={},
                   properties={})


def _ids(catalog: Any) -> list[int]:
    return sorted(catalog.load_table("headwater.t").scan().to_arrow().column("id").to_pylist())


def test_a_rewrite_overtaken_by_another_writer_is_computed_again(tmp_path: Path) -> None:
    catalog, table = _table(tmp_path)
    old = _file(table, "r1", [1, 2])
    _append(table, [old])
    computed: list[str] = []

    def compute(current: Any) -> _rewrite.Rewrite:
        """Replace the file holding id 1 by one without it (a rewrite of run r1's file)."""
        path = _file(current, "r1", [2])
        computed.append(path)
        if len(computed) == 1:  # another writer commits while this one computes
            _append(catalog.load_table("headwater.t"), [_file(current, "r2", [3])])
        removing = [f for f in _rewrite.data_files(current, "t") if f.file_path == old]
        return _rewrite.Rewrite(adding=[path], removing=removing, written=[path])

    done = _rewrite.commit_rewrite(lambda: catalog.load_table("headwater.t"),
                                   threading.RLock(), compute, summary={"k": "v"},
                                   properties={}, earlier=lambda t: None, stream="t",
                                   what="test")
    assert len(computed) == 2 and done.snapshot_id is not None
    assert not Path(computed[0].removeprefix("file://")).exists()  # the stale one, deleted
    assert _ids(catalog) == [2, 3]  # the other writer's row kept, id 1 gone


def test_a_rewrite_always_overtaken_fails_and_leaves_the_table(tmp_path: Path) -> None:
    catalog, table = _table(tmp_path)
    _append(table, [_file(table, "r1", [1])])

    def compute(current: Any) -> _rewrite.Rewrite:
        _append(catalog.load_table("headwater.t"), [_file(current, "r2", [9])])
        path = _file(current, "r1", [])
        return _rewrite.Rewrite(adding=[path], removing=_rewrite.data_files(current, "t"),
                                written=[path])

    with pytest.raises(DestinationError, match="another writer committed"):
        _rewrite.commit_rewrite(lambda: catalog.load_table("headwater.t"),
                                contextlib.nullcontext(), compute, summary={}, properties={},
                                earlier=lambda t: None, stream="t", what="test")
    assert _ids(catalog) == [1] + [9] * _rewrite.REWRITE_TRIES


def test_an_earlier_attempts_commit_is_returned_without_computing(tmp_path: Path) -> None:
    catalog, _ = _table(tmp_path)

    def compute(current: Any) -> _rewrite.Rewrite:
        raise AssertionError("computed")

    done = _rewrite.commit_rewrite(lambda: catalog.load_table("headwater.t"),
                                   contextlib.nullcontext(), compute, summary={}, properties={},
                                   earlier=lambda t: "landed", stream="t", what="test")
    assert done.earlier == "landed" and done.rewrite is None


def test_paths_as_the_table_names_them() -> None:
    from pyarrow import fs as pafs

    from headwater.destinations._table_files._store import S3Access

    assert _rewrite.local("file:///tmp/a b/x.parquet") == "/tmp/a b/x.parquet"
    assert _rewrite.local("/tmp/x.parquet") == "/tmp/x.parquet"
    with pytest.raises(ValueError):
        _rewrite.local("s3://bucket/x.parquet")
    local_fs, path = _rewrite.locate("file:///tmp/a b/x%.parquet", None)
    assert isinstance(local_fs, pafs.LocalFileSystem) and path == "/tmp/a b/x%.parquet"
    store = S3Access(endpoint="http://127.0.0.1:9", access_key="k", secret_key="s")
    for uri in ("s3://bucket/w/data/x.parquet", "s3a://bucket/w/data/x.parquet"):
        s3_fs, path = _rewrite.locate(uri, store)
        assert isinstance(s3_fs, pafs.S3FileSystem) and path == "bucket/w/data/x.parquet"
    with pytest.raises(ValueError, match="on S3"):  # no store to reach it with
        _rewrite.locate("s3://bucket/x.parquet", None)


def test_the_merge_rule_is_null_safe_and_compares_checkpoints_on_ties() -> None:
    assert _merge_rule.keys_match(["id", "we`ird"]) == "t.`id` <=> s.`id` AND " \
        "t.`we``ird` <=> s.`we``ird`"
    rule = _merge_rule.update_when("updated")
    assert rule.startswith("t.`updated` IS NULL OR s.`updated` > t.`updated`")
    assert "s._hw_checkpoint >= t._hw_checkpoint" in rule
    assert _merge_rule.update_when(None) == "s._hw_checkpoint >= t._hw_checkpoint"
