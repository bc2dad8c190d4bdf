"""Nested JSON Lines into Delta: the same typed table as Spark's own JSON reader gives.

Objects land as structs, arrays of strings as arrays, microsecond ISO 8601
date-times (``Z`` or an offset, nested too) as timestamps: compared row by row
with ``spark.read.schema(S).json(...)`` of the same files, where ``S`` is the
table's own schema.  A later object whose struct gained a field evolves the
table (on both writers): the new field lands, earlier rows hold null in it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from headwater.config import load_connection
from headwater.engine import SyncEngine, SyncResult
from headwater.metadata_store import MetadataStore
from tests.integration._cli import HOME, LAKEHOUSE
from tests.integration._connections import connection_file

pytestmark = pytest.mark.spark

DATA = ["id", "at", "day", "user", "items"]


def event(i: int) -> dict[str, Any]:
    return {
        "id": i,
        "at": f"2024-03-01T10:11:{i % 60:02d}.{i * 7919 % 1_000_000:06d}Z",
        "day": f"2024-03-{1 + i % 28:02d}",
        "user": {"name": f"user {i}", "score": i * 0.25,
                 "seen": f"2024-02-{1 + i % 28:02d}T23:59:59.{i:06d}+05:30",
                 "address": {"city": ["Paris", "Oslo", "Lima"][i % 3], "zip": f"{i:05d}"},
                 "tags": [f"t{j}" for j in range(i % 4)]},
        "items": [{"sku": f"s{i}-{j}", "qty": j} for j in range(i % 3)],
    }


def write(folder: Path, name: str, rows: list[dict[str, Any]]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps(r) + "\n" for r in rows))


def run(path: Path) -> SyncResult:
    config = load_connection(path)
    result = SyncEngine(config, MetadataStore(config.metadata_store or "")).run()
    assert result.status == "succeeded", result.to_dict()
    return result


def connection(tmp_path: Path, folder: Path, writer: str) -> Path:
    return connection_file(
        tmp_path, name="nested", source_type="object_storage",
        source={"url": str(folder), "streams": [
            {"name": "events", "globs": ["*.jsonl"], "format": {"type": "jsonl"}}]},
        streams=[{"name": "events", "sync_mode": "incremental",
                  "destination_sync_mode": "append"}],
        lake=str(tmp_path / LAKEHOUSE), store_file=f"{HOME}/headwater.db", writer=writer)


def _sorted(frame: Any) -> list[dict[str, Any]]:
    return sorted((r.asDict(recursive=True) for r in frame.select(*DATA).collect()),
                  key=lambda r: r["id"])


@pytest.mark.parametrize("writer", ["auto", "spark"])
def test_nested_jsonl_lands_as_spark_json_reads_it_and_evolves(
        spark: Any, tmp_path: Path, writer: str) -> None:
    folder = tmp_path / "landing"
    write(folder, "a.jsonl", [event(i) for i in range(0, 60)])
    write(folder, "b.jsonl", [event(i) for i in range(60, 100)])
    path = connection(tmp_path, folder, writer)
    first = run(path)
    assert (first.streams[0].records_written, first.streams[0].records_rejected) == (100, 0)

    table = spark.read.format("delta").load(str(tmp_path / LAKEHOUSE / "events"))
    types = dict(table.select(*DATA).dtypes)
    assert types == {
        "id": "bigint", "at": "timestamp", "day": "date",
        "user": "struct<name:string,score:double,seen:timestamp,"
                "address:struct<city:string,zip:string>,tags:array<string>>",
        "items": "array<struct<sku:string,qty:bigint>>"}
    schema = table.select(*DATA).schema
    theirs = spark.read.schema(schema).json(str(folder))
    assert _sorted(table) == _sorted(theirs)
    assert table.where("_hw_notes IS NOT NULL").count() == 0

    # A later object's struct gains a field (and its items one): the table follows.
    later = [{**event(i), "user": {**event(i)["user"], "vip": True},
              "items": [{"sku": "x", "qty": 1, "price": 2.5}]} for i in range(100, 110)]
    write(folder, "c.jsonl", later)
    second = run(path)
    assert (second.streams[0].records_written, second.streams[0].records_rejected) == (10, 0)
    table = spark.read.format("delta").load(str(tmp_path / LAKEHOUSE / "events"))
    types = dict(table.select(*DATA).dtypes)
    assert types["user"].endswith(",vip:boolean>"), types
    assert types["items"] == "array<struct<sku:string,qty:bigint,price:double>>"
    assert table.where("_hw_notes IS NOT NULL").count() == 0
    got = _sorted(table)
    assert [r["user"]["vip"] for r in got] == [None] * 100 + [True] * 10
    assert got[105]["items"] == [{"sku": "x", "qty": 1, "price": 2.5}]
    theirs = spark.read.schema(table.select(*DATA).schema).json(str(folder))
    assert got == _sorted(theirs)
