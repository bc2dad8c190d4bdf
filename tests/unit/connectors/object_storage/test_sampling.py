"""A failed schema sample never loses the columns the schema did not declare (issue 35)."""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater.connectors.object_storage._inference import SampleError
from tests.unit.connectors.object_storage.conftest import (
    ROWS,
    encode,
    read_all,
    rejected,
    source,
    write,
)

#: Eight CSV records, the last with a byte UTF-8 cannot decode.
ONE_BAD_BYTE = (b"id,name,amount\n" + b"".join(b"%d,n%d,%d.5\n" % (i, i, i) for i in range(7))
                + b"7,\xff,7.5\n")


def test_one_undecodable_value_keeps_the_undeclared_columns(tmp_path: Path) -> None:
    # Before: pyarrow refused the whole sample, the stream had only `name` (declared),
    # and all 8 rows landed rejected with `id` and `amount` in their notes.
    write(tmp_path, "a.csv", ONE_BAD_BYTE)
    stream = source(str(tmp_path), globs=["*.csv"], format={"type": "csv"},
                    schema={"name": {"type": "string"}}).streams()[0]
    table = read_all(stream)
    assert {"id", "name", "amount"} <= set(table.column_names)
    assert [(r["key"], r["record"]) for r in rejected(table)] == [("a.csv", 7)]
    good = [r for r in table.to_pylist() if not r["_hw_notes"]]
    assert [(r["id"], r["name"], r["amount"]) for r in good] == [
        (i, f"n{i}", i + 0.5) for i in range(7)]


def test_an_undecodable_value_does_not_make_its_column_binary(tmp_path: Path) -> None:
    write(tmp_path, "a.csv", b"id,name\n1,a\n2,\xe9\n")
    stream = source(str(tmp_path), globs=["*.csv"], format={"type": "csv"}).streams()[0]
    assert stream.json_schema()["properties"]["name"] == {"type": ["null", "string"]}


def test_a_failed_sample_samples_the_next_object(tmp_path: Path) -> None:
    write(tmp_path, "a.jsonl.gz", b"not gzip at all\n")
    write(tmp_path, "b.jsonl", encode(ROWS[:3], "jsonl"))
    stream = source(str(tmp_path), schema={"name": {"type": "string"}}).streams()[0]
    assert {"id", "name", "amount", "active", "at"} <= set(stream.json_schema()["properties"])


def test_no_readable_object_fails_the_plan_naming_it(tmp_path: Path) -> None:
    # Before: the schema was the overrides alone and every record landed in notes.
    write(tmp_path, "a.jsonl.gz", b"not gzip at all\n")
    write(tmp_path, "b.jsonl", b"")  # an empty object says nothing, and is no failure
    stream = source(str(tmp_path), schema={"name": {"type": "string"}}).streams()[0]
    with pytest.raises(SampleError, match=r"stream s cannot be sampled.*a\.jsonl\.gz: "):
        stream.partitions(None)


def test_a_stream_of_empty_objects_samples_to_no_columns(tmp_path: Path) -> None:
    write(tmp_path, "a.jsonl", b"")
    stream = source(str(tmp_path)).streams()[0]
    assert stream.partitions(None) is not None
    assert set(stream.json_schema()["properties"]) == {"_source_key", "_source_record"}


def test_a_jsonl_value_of_another_type_keeps_the_other_columns(tmp_path: Path) -> None:
    # Before: pyarrow could give `geo.lat` no one type, the sample failed and the
    # stream had only `name` (declared); every record was rejected.
    lines = [b'{"id": %d, "name": "n", "geo": {"lat": 1.5}}' % i for i in range(7)]
    write(tmp_path, "a.jsonl", b"\n".join([*lines, b'{"id": 7, "geo": {"lat": "north"}}\n']))
    stream = source(str(tmp_path), schema={"name": {"type": "string"}}).streams()[0]
    table = read_all(stream)
    assert {"id", "name", "geo"} <= set(table.column_names)
    assert [(r["key"], r["record"]) for r in rejected(table)] == [("a.jsonl", 7)]
    assert table.column("id").to_pylist() == list(range(8))
