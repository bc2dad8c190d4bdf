"""Open values land as Delta VARIANT; ``json_columns`` keeps the source's own JSON text.

Real Spark, real Delta tables, JSON Lines read by the object storage source
from a local folder.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from headwater.config import load_connection
from headwater.engine import SyncEngine, SyncResult
from headwater.errors import ConfigError
from headwater.metadata_store import MetadataStore
from tests.integration._connections import connection_file

pytestmark = pytest.mark.spark

#: ``attrs`` is an open object, ``extra`` untyped, ``labels`` an array of open values.
SCHEMA = {"id": {"type": "integer"}, "updated": {"type": "integer"},
          "attrs": {"type": "object"}, "extra": {}, "labels": {"type": "array"}}

LINES = [
    '{"id": 1, "updated": 1, "attrs": {"zeta": 1.50, "alpha" : {"deep": [1, "two"]}}, '
    '"extra": "text", "labels": ["a", {"b": 2}]}',
    '{"id": 2, "updated": 1, "attrs": {"zeta": -3, "alpha": null}, "extra": 7, "labels": []}',
    '{"id": 3, "updated": 1, "attrs": null, "extra": {"k": true}}',
]


def _write(folder: Path, name: str, lines: list[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(line + "\n" for line in lines))


def _connection(tmp_path: Path, *, mode: str = "append", json_columns: list[str] | None = None,
                writer: str | None = None, checkpoint: dict[str, Any] | None = None) -> Path:
    stream: dict[str, Any] = {"name": "events", "sync_mode": "incremental",
                              "destination_sync_mode": mode}
    if mode in ("append_dedup", "history"):
        stream["primary_key"] = ["id"]
    if json_columns is not None:
        stream["json_columns"] = json_columns
    return connection_file(
        tmp_path, name="variants", source_type="object_storage",
        source={"url": str(tmp_path / "in"), "streams": [
            {"name": "events", "globs": ["*.jsonl"], "schema": SCHEMA}]},
        streams=[stream], writer=writer, checkpoint=checkpoint)


def _sync(path: Path) -> SyncResult:
    config = load_connection(path)
    result = SyncEngine(config, MetadataStore(config.metadata_store or "")).run()
    assert result.status == "succeeded", result.to_dict()
    return result


def _table(spark: Any, tmp_path: Path) -> Any:
    return spark.read.format("delta").load(str(tmp_path / "lake" / "events"))


def _writer_reasons(path: Path) -> set[str]:
    config = load_connection(path)
    store = MetadataStore(config.metadata_store or "")
    run = store.list_runs(config.name)[0]
    return {str(c.stats.get("writer_reason")) for c in store.list_checkpoints(run.run_id)}


def test_open_values_land_as_variant_and_answer_path_queries(spark: Any, tmp_path: Path) -> None:
    _write(tmp_path / "in", "a.jsonl", LINES)
    path = _connection(tmp_path)
    result = _sync(path)
    assert result.streams[0].records_written == 3
    assert result.streams[0].records_rejected == 0
    table = _table(spark, tmp_path)
    types = {f.name: f.dataType.simpleString() for f in table.schema}
    assert types["attrs"] == types["extra"] == types["labels"] == "variant"
    table.createOrReplaceTempView("events_variant")
    got = {r["id"]: r.asDict() for r in spark.sql("""
        SELECT id,
               variant_get(attrs, '$.zeta', 'decimal(5,2)') AS zeta,
               attrs:alpha.deep[1]::string AS deep,
               variant_get(extra, '$', 'string') AS extra_text,
               extra:k::boolean AS k,
               variant_get(labels, '$[1].b', 'int') AS b,
               schema_of_variant(extra) AS extra_type,
               to_json(attrs) AS attrs_json
        FROM events_variant""").collect()}
    assert str(got[1]["zeta"]) == "1.50" and got[1]["deep"] == "two" and got[1]["b"] == 2
    assert got[1]["extra_text"] == "text" and got[1]["extra_type"] == "STRING"
    assert got[2]["zeta"] == -3 and got[2]["extra_type"] == "BIGINT"
    assert got[3]["k"] is True and got[3]["attrs_json"] is None
    reasons = _writer_reasons(path)
    assert any("VARIANT" in reason for reason in reasons), reasons


def _sync_twice(tmp_path: Path, mode: str) -> None:
    """``LINES``, then a change of key 2 and a new key 4, each synced in ``mode``."""
    _write(tmp_path / "in", "a.jsonl", LINES)
    path = _connection(tmp_path, mode=mode)
    _sync(path)
    _write(tmp_path / "in", "b.jsonl", [
        '{"id": 2, "updated": 2, "attrs": {"zeta": 99, "new": "yes"}, "extra": [1, 2]}',
        '{"id": 4, "updated": 2, "attrs": {}, "extra": null}'])
    _sync(path)


def test_append_dedup_merges_rows_with_variant_columns(spark: Any, tmp_path: Path) -> None:
    _sync_twice(tmp_path, "append_dedup")
    table = _table(spark, tmp_path)
    assert table.count() == 4
    got = {r["id"]: r.asDict() for r in table.selectExpr(
        "id", "attrs:zeta::int AS zeta", "attrs:new::string AS new",
        "to_json(extra) AS extra").collect()}
    assert got[2] == {"id": 2, "zeta": 99, "new": "yes", "extra": "[1,2]"}
    assert got[1]["zeta"] == 1 and got[4]["extra"] is None


def test_history_closes_versions_with_variant_columns_as_stored(spark: Any,
                                                                  tmp_path: Path) -> None:
    """A closed version is set back from the stored copy its MERGE's source carries (a
    struct of the table's columns): VARIANT values survive that copy unchanged."""
    _sync_twice(tmp_path, "history")
    rows = {(r.id, r._hw_is_current): (r.attrs, r.extra) for r in _table(spark, tmp_path)
            .selectExpr("id", "_hw_is_current", "to_json(attrs) AS attrs",
                        "to_json(extra) AS extra").collect()}
    assert rows == {
        (1, True): ('{"alpha":{"deep":[1,"two"]},"zeta":1.5}', '"text"'),
        (2, False): ('{"alpha":null,"zeta":-3}', "7"),
        (2, True): ('{"new":"yes","zeta":99}', "[1,2]"),
        (3, True): (None, '{"k":true}'), (4, True): ("{}", None)}


def test_overwrite_of_several_checkpoints_stages_and_publishes_variants(
        spark: Any, tmp_path: Path) -> None:
    for n in range(3):
        _write(tmp_path / "in", f"{n}.jsonl", [line.replace('"id": ', f'"id": {n + 1}0')
                                               for line in LINES])
    stream_path = connection_file(
        tmp_path, name="variants", source_type="object_storage",
        source={"url": str(tmp_path / "in"), "streams": [
            {"name": "events", "globs": ["*.jsonl"], "schema": SCHEMA,
             "objects_per_partition": 1}]},  # a checkpoint per object
        streams=[{"name": "events", "sync_mode": "full_refresh",
                  "destination_sync_mode": "overwrite"}],
        checkpoint={"partitions_per_checkpoint": 1})
    _sync(stream_path)
    _sync(stream_path)
    table = _table(spark, tmp_path)
    assert table.count() == 9
    assert table.schema["attrs"].dataType.simpleString() == "variant"
    assert sorted(r[0] for r in table.selectExpr("attrs:alpha.deep[0]::int").collect()
                  if r[0] is not None) == [1, 1, 1]


def test_json_columns_keep_the_source_text_exactly(spark: Any, tmp_path: Path) -> None:
    _write(tmp_path / "in", "a.jsonl", LINES)
    path = _connection(tmp_path, json_columns=["attrs", "labels"])
    _sync(path)
    table = _table(spark, tmp_path)
    types = {f.name: f.dataType.simpleString() for f in table.schema}
    assert types["attrs"] == types["labels"] == "string" and types["extra"] == "variant"
    got = {r["id"]: r for r in table.select("id", "attrs", "labels").collect()}
    # Keys in the source's order, 1.50 as written, the spacing of the line.
    assert got[1]["attrs"] == '{"zeta": 1.50, "alpha" : {"deep": [1, "two"]}}'
    assert got[1]["labels"] == '["a", {"b": 2}]'
    assert got[2]["attrs"] == '{"zeta": -3, "alpha": null}' and got[2]["labels"] == "[]"
    assert got[3]["attrs"] is None and got[3]["labels"] is None


def test_json_columns_keep_the_text_on_the_line_by_line_path(spark: Any, tmp_path: Path) -> None:
    # "id": "x" does not fit its integer column: the block is read line by line.
    _write(tmp_path / "in", "a.jsonl", [LINES[0], '{"id": "x", "attrs": {"b": 1.0,"a":2}}'])
    path = _connection(tmp_path, json_columns=["attrs"])
    result = _sync(path)
    assert result.streams[0].records_rejected == 1
    texts = sorted(r["attrs"] for r in _table(spark, tmp_path).select("attrs").collect())
    assert texts == ['{"b": 1.0,"a":2}', '{"zeta": 1.50, "alpha" : {"deep": [1, "two"]}}']


def test_a_value_json_cannot_hold_is_null_with_a_note(spark: Any, tmp_path: Path) -> None:
    _write(tmp_path / "in", "a.jsonl", ['{"id": 1, "extra": NaN}', LINES[1]])
    result = _sync(_connection(tmp_path))
    assert result.streams[0].records_rejected == 1
    noted = _table(spark, tmp_path).where("id = 1").select("extra", "_hw_notes").first()
    assert noted["extra"] is None and noted["_hw_notes"][0]["field"] == "extra"


def test_text_spark_cannot_parse_becomes_null_with_a_note(spark: Any) -> None:
    from headwater.destinations.delta._variant import NOT_JSON, with_variants

    rows = spark.createDataFrame(
        [("1", None, '{"a": 1}'), ("2", None, "{not json"), ("3", None, None)],
        "id string, _hw_notes array<struct<field:string,reason:string,value:string>>, v string")
    got = {r["id"]: r for r in with_variants(rows, ["v"]).selectExpr(
        "id", "v:a::int AS a", "_hw_notes").collect()}
    assert got["1"]["a"] == 1 and got["1"]["_hw_notes"] is None
    assert got["2"]["_hw_notes"][0].asDict() == {"field": "v", "reason": NOT_JSON,
                                                 "value": "{not json"}
    assert got["3"]["_hw_notes"] is None


def test_json_columns_must_name_nested_columns(tmp_path: Path) -> None:
    _write(tmp_path / "in", "a.jsonl", LINES)
    with pytest.raises(ConfigError, match="'id' is a integer"):
        _sync(_connection(tmp_path, json_columns=["id"]))
    with pytest.raises(ConfigError, match="no column 'nope'"):
        _sync(_connection(tmp_path, json_columns=["nope"]))


def test_variant_table_is_described_coherently(spark: Any, tmp_path: Path) -> None:
    _write(tmp_path / "in", "a.jsonl", LINES[:1])
    _sync(_connection(tmp_path))
    detail = json.loads(json.dumps(_table(spark, tmp_path).schema.jsonValue()))
    assert {f["name"]: f["type"] for f in detail["fields"]}["attrs"] == "variant"
