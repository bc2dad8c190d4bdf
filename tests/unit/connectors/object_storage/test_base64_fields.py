"""A field declared ``{"type": "string", "contentEncoding": "base64"}`` lands as the bytes
its text encodes, whichever path reads it.

Found by an outside check: the JSON Lines bulk path (pyarrow's reader, and the
JSON-text variant), the CSV and Parquet readers' casts and the bulk typing of dict
records all landed the *text's* bytes (``b"aGk="`` for ``hi``), with no note; only the
value-by-value path decoded it.  The expected values here are Python's own
``base64.b64decode`` of the written text, not any path of ours.
"""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.unit.connectors.object_storage.conftest import read_all, source, write

BASE64 = {"type": "string", "contentEncoding": "base64"}
COLUMNS: dict[str, Any] = {
    "id": {"type": "integer"},
    "b": BASE64,
    "o": {"type": "object", "properties": {"b": BASE64}},
    "bs": {"type": "array", "items": BASE64},
    "os": {"type": "array", "items": {"type": "object", "properties": {"b": BASE64}}},
}
#: What each row is written with, and what lands (bytes decoded by Python, None noted).
GOOD = [b"hi", b"", b"\x00\xff\xfe binary \n", bytes(range(256))]


def _text(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _records(broken: bool) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = [
        {"id": i, "b": _text(v), "o": {"b": _text(v)}, "bs": [_text(v), None],
         "os": [{"b": _text(v)}]} for i, v in enumerate(GOOD)]
    if broken:  # invalid base64: null plus a note, never the row, never the read
        records.append({"id": 9, "b": "aGk", "o": {"b": "not base64!"}, "bs": ["é"],
                        "os": [{"b": "aGk==="}, {"b": "aGk="}]})
    return records


def _check(table: pa.Table, broken: bool) -> None:
    rows = table.sort_by("_source_record").to_pylist()
    for row, data in zip(rows, GOOD, strict=False):
        assert (row["b"], row["o"], row["bs"], row["os"]) == (data, {"b": data}, [data, None],
                                                               [{"b": data}]), row
        assert row["_hw_notes"] is None
    if broken:
        last = rows[-1]
        assert (last["b"], last["o"], last["bs"], last["os"]) == (
            None, {"b": None}, None, [{"b": None}, {"b": b"hi"}])
        assert sorted((n["field"], n["value"]) for n in last["_hw_notes"]) == [
            ("b", "aGk"), ("bs", json.dumps(["é"])), ("o.b", "not base64!"), ("os.b", "aGk===")]
        assert {n["reason"] for n in last["_hw_notes"]} == {
            "expected binary: not base64", "expected array of binary: not base64"}
    assert len(rows) == len(GOOD) + broken


@pytest.mark.parametrize("broken", [False, True], ids=["valid", "invalid"])
@pytest.mark.parametrize("tail", ["", '{"id": 99, "b": 1}\n', "{broken\n"],
                         ids=["bulk", "a misfit", "a malformed line"])
@pytest.mark.parametrize("open_column", [False, True], ids=["typed", "json-text"])
def test_jsonl_base64_fields_land_decoded(tmp_path: Path, broken: bool, tail: str,
                                          open_column: bool) -> None:
    """JSON Lines, in bulk, beside a JSON-text column (the msgspec path) and with a
    line that sends the block line by line (a misfit, a malformed line)."""
    columns = dict(COLUMNS, any={}) if open_column else COLUMNS
    text = "".join(json.dumps(r) + "\n" for r in _records(broken))
    write(tmp_path, "a.jsonl", (text + tail).encode())
    table = read_all(source(str(tmp_path), globs=["*.jsonl"], schema=columns).streams()[0])
    table = table.filter(pa.compute.less(table["id"], 99)) if tail.startswith('{"id"') \
        else table.filter(pa.compute.is_valid(table["id"]))
    _check(table, broken)


@pytest.mark.parametrize("broken", [False, True], ids=["valid", "invalid"])
def test_csv_base64_fields_land_decoded(tmp_path: Path, broken: bool) -> None:
    # Quoted: an empty unquoted field is null in CSV, an empty quoted one the empty string.
    lines = ["id,b"] + [f'{r["id"]},"{r["b"]}"' for r in _records(broken)]
    write(tmp_path, "a.csv", ("\n".join(lines) + "\n").encode())
    table = read_all(source(str(tmp_path), globs=["*.csv"], format={"type": "csv"},
                            schema={"id": {"type": "integer"}, "b": BASE64}).streams()[0])
    rows = table.sort_by("_source_record").to_pylist()
    assert [row["b"] for row in rows] == GOOD + ([None] if broken else [])
    assert [[(n["field"], n["value"]) for n in row["_hw_notes"] or []] for row in rows] == \
        [[]] * len(GOOD) + ([[("b", "aGk")]] if broken else [])


def test_parquet_text_declared_base64_lands_decoded_and_bytes_as_they_are(
        tmp_path: Path) -> None:
    out = io.BytesIO()
    pq.write_table(pa.table({"t": [_text(v) for v in GOOD] + ["aGk"],
                             "raw": [*GOOD, b"aGk"]}), out)
    write(tmp_path, "a.parquet", out.getvalue())
    table = read_all(source(str(tmp_path), globs=["*.parquet"], format={"type": "parquet"},
                            schema={"t": BASE64, "raw": BASE64}).streams()[0])
    rows = table.sort_by("_source_record").to_pylist()
    assert [row["t"] for row in rows] == [*GOOD, None]
    assert [row["raw"] for row in rows] == [*GOOD, b"aGk"]  # bytes are bytes already
    assert rows[-1]["_hw_notes"] == [{"field": "t", "reason": "expected binary: not base64",
                                      "value": "aGk"}]
