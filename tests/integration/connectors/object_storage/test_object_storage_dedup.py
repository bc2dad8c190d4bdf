"""Object storage into ``append_dedup``: which version of a key the Delta table keeps.

New objects are found by key; the versions of a key are ordered by the column the
connection names as ``cursor_field`` (issue 35: stale rows in a later object used to
replace newer ones, the object key being the only order), else by object key.  Two
streams over the same objects, one of each kind, synced twice; the tables are read
back with plain Spark.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from headwater.config import load_connection
from headwater.engine import SyncEngine
from headwater.metadata_store import MetadataStore
from tests.integration._connections import connection_file

pytestmark = pytest.mark.spark

OLD, NEW, NEWEST = "2024-01-01T00:00:00Z", "2024-01-02T00:00:00Z", "2024-01-03T00:00:00Z"


def _put(folder: Path, key: str, ids: range, updated_at: str, version: str) -> None:
    (folder / key).parent.mkdir(parents=True, exist_ok=True)
    (folder / key).write_text("".join(
        json.dumps({"id": i, "updated_at": updated_at, "version": version}) + "\n"
        for i in ids))


def _sync_and_read(spark: Any, tmp_path: Path) -> dict[str, dict[int, str]]:
    """Sync both streams (the same objects: ``by_updated_at`` orders versions by that
    column, ``by_key`` by object key); each table's version of every key."""
    path = connection_file(
        tmp_path, name="landing", source_type="object_storage",
        source={"url": str(tmp_path / "objects"),
                "streams": [{"name": name, "primary_key": ["id"]} for name in STREAMS]},
        streams=[{"name": name, "sync_mode": "incremental",
                  "destination_sync_mode": "append_dedup", **extra}
                 for name, extra in STREAMS.items()])
    config = load_connection(path)
    result = SyncEngine(config, MetadataStore(config.metadata_store or "")).run()
    assert result.status == "succeeded", result.to_dict()
    tables = {}
    for name in STREAMS:
        table = spark.read.format("delta").load(str(tmp_path / "lake" / name))
        found = [(row["id"], row["version"]) for row in table.collect()]
        assert len(found) == len({key for key, _ in found})  # one row per key
        tables[name] = dict(found)
    return tables


STREAMS: dict[str, dict[str, Any]] = {"by_updated_at": {"cursor_field": "updated_at"},
                                      "by_key": {}}


def test_a_record_cursor_keeps_the_newest_version_whatever_object_it_came_in(
        spark: Any, tmp_path: Path) -> None:
    objects = tmp_path / "objects"
    # One run: the stale object's key sorts after the fresh one's.
    _put(objects, "2024/01/a.jsonl", range(100), NEW, "a")
    _put(objects, "2024/01/b.jsonl", range(100), OLD, "b-stale")
    first = _sync_and_read(spark, tmp_path)
    assert first["by_updated_at"] == {i: "a" for i in range(100)}
    # Without a record cursor the later key wins, as the docs say.
    assert first["by_key"] == {i: "b-stale" for i in range(100)}

    # The next run: stale rows of old keys against the table, newer rows, new keys.
    _put(objects, "2024/02/c.jsonl", range(50), OLD, "c-stale")
    _put(objects, "2024/02/d.jsonl", range(90, 110), NEWEST, "d")
    second = _sync_and_read(spark, tmp_path)
    assert second["by_updated_at"] == {**{i: "a" for i in range(90)},
                                       **{i: "d" for i in range(90, 110)}}
    assert second["by_key"] == {**{i: "c-stale" for i in range(50)},
                                **{i: "b-stale" for i in range(50, 90)},
                                **{i: "d" for i in range(90, 110)}}
