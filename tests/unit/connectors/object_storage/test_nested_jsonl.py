"""Nested JSON Lines: inferred as objects with properties, read and typed by Arrow in bulk."""

from __future__ import annotations

import datetime as dt
import io
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from headwater.connectors.object_storage._formats import ReadPosition, read_jsonl
from headwater.table_schema import UTC_TIMESTAMP, arrow_schema_for
from tests.unit.connectors.object_storage.conftest import read_all, rejected, source, write

UTC = dt.UTC


def event(i: int) -> dict[str, Any]:
    return {
        "id": i,
        "at": f"2024-03-01T10:11:{i % 60:02d}.{i:06d}Z",
        "day": f"2024-03-{1 + i % 28:02d}",
        "user": {"name": f"u{i}", "seen": f"2024-03-01T10:11:12.5{i % 10}+02:00",
                 "geo": {"lat": i + 0.5, "lon": i}, "tags": ["a", f"t{i}"]},
        "items": [{"sku": f"s{i}", "qty": i % 3}],
        "note": "2024-03-01 or so" if i == 3 else "text",
    }


EVENTS = [event(i) for i in range(40)]


def jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def test_inference_gives_nested_properties_date_times_and_dates(tmp_path: Path) -> None:
    write(tmp_path, "e.jsonl", jsonl(EVENTS))
    props = source(str(tmp_path)).streams()[0].json_schema()["properties"]
    assert props["at"] == {"type": ["null", "string"], "format": "date-time"}
    assert props["day"] == {"type": ["null", "string"], "format": "date"}
    assert props["note"] == {"type": ["null", "string"]}
    user = props["user"]
    assert user["type"] == ["null", "object"]
    assert user["properties"]["seen"]["format"] == "date-time"
    assert user["properties"]["geo"]["properties"] == {
        "lat": {"type": ["null", "number"]}, "lon": {"type": ["null", "integer"]}}
    assert user["properties"]["tags"] == {"type": ["null", "array"],
                                          "items": {"type": ["null", "string"]}}
    assert props["items"]["items"]["properties"]["qty"] == {"type": ["null", "integer"]}


def test_json_columns_keep_each_line_s_own_text(tmp_path: Path) -> None:
    """``json_columns: [user, items]``: the table keeps them as JSON text, and the reader
    (told so: ``Stream.lands_in``) keeps the line's own bytes of them, rather than a
    struct written back (a key a line lacks as null, re-spaced, 1 as 1.0)."""
    rows = [*EVENTS[:5], {"id": 99, "user": {"name": "short"}, "items": [{"qty": 1}, {}]}]
    write(tmp_path, "e.jsonl", jsonl(rows))
    table = read_all(source(str(tmp_path)).streams()[0], json_columns=["user", "items"])
    assert table.schema.field("user").type == pa.string()
    landed = table.sort_by("_source_record").to_pylist()
    assert [(r["user"], r["items"]) for r in landed] == [
        (json.dumps(r["user"]), json.dumps(r["items"])) for r in rows]
    assert rejected(table) == []


def test_nested_rows_land_typed_with_microseconds_and_offsets(tmp_path: Path) -> None:
    write(tmp_path, "e.jsonl", jsonl(EVENTS))
    table = read_all(source(str(tmp_path)).streams()[0])
    assert table.schema.field("at").type == UTC_TIMESTAMP
    assert table.schema.field("day").type == pa.date32()
    assert pa.types.is_struct(table.schema.field("user").type)
    assert rejected(table) == []
    row = table.sort_by("_source_record").to_pylist()[7]
    assert row["at"] == dt.datetime(2024, 3, 1, 10, 11, 7, 7, tzinfo=UTC)
    assert row["day"] == dt.date(2024, 3, 8)
    assert row["user"] == {"name": "u7", "seen": dt.datetime(2024, 3, 1, 8, 11, 12, 570000,
                                                             tzinfo=UTC),
                           "geo": {"lat": 7.5, "lon": 7}, "tags": ["a", "t7"]}
    assert row["items"] == [{"sku": "s7", "qty": 1}]


def test_well_formed_blocks_are_typed_by_arrow_bad_lines_become_rejects(tmp_path: Path) -> None:
    write(tmp_path, "e.jsonl", jsonl(EVENTS))
    stream = source(str(tmp_path)).streams()[0]
    schema = pa.schema([f for f in arrow_schema_for(stream.json_schema())
                        if not f.name.startswith("_source")])
    out = list(read_jsonl(io.BytesIO(jsonl(EVENTS)), "e.jsonl", schema, ReadPosition()))
    assert out and all(isinstance(b, pa.RecordBatch) for b in out)  # no dict per record
    assert pa.types.is_struct(out[0].schema.field("user").type)
    # Date-times come as text, cast by the engine (as the line-by-line path reads them).
    assert out[0].schema.field("at").type == pa.string()

    broken = [*EVENTS[:3], {"id": 3, "user": {"geo": {"lat": "north"}}}]
    write(tmp_path, "e.jsonl", jsonl(broken) + b'{"id": 4, "user": \n')
    table = read_all(stream).sort_by("_source_record")
    assert table.column("id").to_pylist() == [0, 1, 2, 3, None]
    notes = table.column("_hw_notes").to_pylist()
    assert [n["field"] for n in notes[3]] == ["user.geo.lat"]
    assert table.column("user").to_pylist()[3]["geo"] == {"lat": None, "lon": None}
    assert "malformed JSON" in notes[4][0]["reason"]


def test_overrides_replace_a_nested_column(tmp_path: Path) -> None:
    write(tmp_path, "e.jsonl", jsonl(EVENTS[:5]))
    stream = source(str(tmp_path), schema={"user": {"type": "object", "properties": {
        "name": {"type": "string"}}}}).streams()[0]
    table = read_all(stream)
    assert table.schema.field("user").type == pa.struct([("name", pa.string())])
    assert sorted(table.column("user").to_pylist(), key=str)[0] == {"name": "u0"}
    assert {n["field"] for row in table.column("_hw_notes").to_pylist() for n in row or []} \
        == {"user.seen", "user.geo", "user.tags"}


def test_parquet_structs_are_objects_with_properties(tmp_path: Path) -> None:
    data = pa.Table.from_pylist([{"id": 1, "user": {"name": "a", "tags": ["x"]},
                                  "items": [{"sku": "s", "qty": 1}]}])
    buffer = io.BytesIO()
    pq.write_table(data, buffer)
    write(tmp_path, "p.parquet", buffer.getvalue())
    stream = source(str(tmp_path), format={"type": "parquet"}).streams()[0]
    props = stream.json_schema()["properties"]
    assert set(props["user"]["properties"]) == {"name", "tags"}
    assert props["items"]["items"]["properties"]["qty"] == {"type": ["null", "integer"]}
    table = read_all(stream)
    assert table.select(["user", "items"]).to_pylist() == data.select(["user", "items"]).to_pylist()
