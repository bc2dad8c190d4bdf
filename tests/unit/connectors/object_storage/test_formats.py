"""Every format and compression reads back with the right types and record numbers."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pyarrow as pa
import pytest

from tests.unit.connectors.object_storage.conftest import (
    COMPRESSORS,
    ROWS,
    encode,
    read_all,
    rejected,
    source,
    write,
)

FORMATS = ["csv", "jsonl", "parquet", "avro"]
SUFFIX = {"csv": ".csv", "jsonl": ".jsonl", "parquet": ".parquet", "avro": ".avro"}


@pytest.mark.parametrize("compression", sorted(COMPRESSORS))
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_and_compression_round_trips(tmp_path: Path, fmt: str,
                                                  compression: str) -> None:
    key = f"in/data{SUFFIX[fmt]}{compression}"
    write(tmp_path, key, COMPRESSORS[compression](encode(ROWS, fmt)))
    stream = source(str(tmp_path), globs=["in/*"], format={"type": fmt}).streams()[0]
    props = stream.json_schema()["properties"]
    assert props["id"]["type"] == ["null", "integer"]
    assert props["amount"]["type"] == ["null", "number"]
    assert props["active"]["type"] == ["null", "boolean"]
    assert props["at"]["format"] == "date-time"
    table = read_all(stream)
    assert table.schema.field("at").type == pa.timestamp("us", tz="UTC")
    assert rejected(table) == []
    got = table.sort_by("_source_record").to_pylist()
    assert [r["_source_record"] for r in got] == list(range(len(ROWS)))
    assert {r["_source_key"] for r in got} == {key}
    for want, row in zip(ROWS, got, strict=True):
        assert (row["id"], row["name"], row["amount"], row["active"]) == \
            (want["id"], want["name"], want["amount"], want["active"])
        assert row["at"] == dt.datetime.fromisoformat(want["at"])


def test_csv_options_delimiter_quote_no_header_and_encoding(tmp_path: Path) -> None:
    text = "1;'a;b';2.5\n2;'é';3\n"
    write(tmp_path, "x.csv", text.encode("latin-1"))
    stream = source(str(tmp_path), format={
        "type": "csv", "delimiter": ";", "quote_char": "'", "header": False,
        "column_names": ["id", "label", "amount"], "encoding": "latin-1"}).streams()[0]
    table = read_all(stream)
    assert table.select(["id", "label", "amount"]).to_pylist() == [
        {"id": 1, "label": "a;b", "amount": 2.5}, {"id": 2, "label": "é", "amount": 3.0}]


def test_csv_column_names_with_a_header_are_refused(tmp_path: Path) -> None:
    # The reader takes column_names only without a header: they were accepted, then ignored.
    from headwater.errors import SpecValidationError

    with pytest.raises(SpecValidationError) as caught:
        source(str(tmp_path), format={"type": "csv", "column_names": ["id", "label"]})
    [(field, problem)] = caught.value.problems
    assert field == "source.config.streams.0.format.csv"
    assert "column_names names the columns of objects without a header" in problem


def test_schema_override_wins_over_inference(tmp_path: Path) -> None:
    write(tmp_path, "x.jsonl", encode(ROWS, "jsonl"))
    stream = source(str(tmp_path), schema={"id": {"type": "string"},
                                           "extra": {"type": "integer"}}).streams()[0]
    table = read_all(stream)
    assert table.schema.field("id").type == pa.string()
    assert table.column("id").to_pylist()[:2] == ["0", "1"]
    assert table.column("extra").null_count == len(ROWS)


def test_globs_and_prefix_choose_objects_in_key_order(tmp_path: Path) -> None:
    for key in ["b/2.jsonl", "a/1.jsonl", "a/sub/3.jsonl", "a/skip.csv", "c/4.jsonl"]:
        write(tmp_path, key, encode(ROWS[:1], "jsonl"))
    stream = source(str(tmp_path), prefix="a", globs=["a/**/*.jsonl", "a/*.jsonl"]).streams()[0]
    assert [o.key for o in stream.objects()] == ["a/1.jsonl", "a/sub/3.jsonl"]
    everything = source(str(tmp_path), globs=["**/*.jsonl"]).streams()[0]
    assert [o.key for o in everything.objects()] == ["a/1.jsonl", "a/sub/3.jsonl", "b/2.jsonl",
                                                  "c/4.jsonl"]
