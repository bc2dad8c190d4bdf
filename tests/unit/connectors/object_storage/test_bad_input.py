"""A corpus of malformed objects: each bad record kept with key, record number and reason."""

from __future__ import annotations

import gzip
from pathlib import Path

from tests.unit.connectors.object_storage.conftest import (
    ROWS,
    encode,
    read_all,
    rejected,
    source,
    write,
)


def test_malformed_jsonl_corpus(tmp_path: Path) -> None:
    good = encode(ROWS[:4], "jsonl")
    write(tmp_path, "a-good.jsonl", good)
    write(tmp_path, "b-broken.jsonl",
          good[:40] + b"\n" + b'{"id": 7, "name": "x"\n' + b"\n" + b"[1, 2]\n"
          + b'{"id": "seven"}\n' + b'{"name": "\xff\xfe"}\n')
    write(tmp_path, "c-empty.jsonl", b"")
    write(tmp_path, "d-truncated.jsonl.gz", gzip.compress(good * 50)[:-30])
    write(tmp_path, "e-not-gzip.jsonl.gz", b"plain text, not gzip\n")
    # (sampled, "seven" would make id a string column: the schema says integer)
    stream = source(str(tmp_path), globs=["*.jsonl*"],
                    schema={"id": {"type": "integer"}}).streams()[0]
    table = read_all(stream)
    bad = rejected(table)
    by_key: dict[str, list[int]] = {}
    for row in bad:
        by_key.setdefault(row["key"], []).append(row["record"])
    # b: line 0 is cut mid-record, line 1 unterminated, (line 2 blank), line 3 an
    # array, line 4 a wrong type, line 5 bad UTF-8.
    assert by_key == {"b-broken.jsonl": [0, 1, 3, 4, 5],
                      "d-truncated.jsonl.gz": [by_key["d-truncated.jsonl.gz"][0]],
                      "e-not-gzip.jsonl.gz": [0]}
    reasons = {(r["key"], r["record"]): " ".join(r["reasons"]) for r in bad}
    assert "malformed JSON" in reasons[("b-broken.jsonl", 1)]
    assert "not an object" in reasons[("b-broken.jsonl", 3)]
    assert "expected int64" in reasons[("b-broken.jsonl", 4)]
    assert "UTF-8" in reasons[("b-broken.jsonl", 5)]
    truncated_at = by_key["d-truncated.jsonl.gz"][0]
    assert "unreadable after" in reasons[("d-truncated.jsonl.gz", truncated_at)]
    # everything before the damage was kept, each record once
    kept = [r for r in table.to_pylist() if r["_source_key"] == "d-truncated.jsonl.gz"
            and not r["_hw_notes"]]
    assert [r["_source_record"] for r in kept] == list(range(truncated_at))
    assert truncated_at > 100
    assert sum(1 for r in table.to_pylist() if r["_source_key"] == "a-good.jsonl") == 4


def test_malformed_csv_corpus(tmp_path: Path) -> None:
    write(tmp_path, "a.csv", b"id,name,amount\n1,a,1.5\n2,b,2.5,extra\n3\n4,d,not-a-number\n"
                             b"5,\xff\xfe,5\n6,f,6\n")
    write(tmp_path, "b.csv", b"")
    write(tmp_path, "c.csv", b"id,name,amount\n")
    write(tmp_path, "d.csv", b'id,name,amount\n1,"unterminated,2\n')
    stream = source(str(tmp_path), globs=["*.csv"], format={"type": "csv"},
                    schema={"id": {"type": "integer"}, "name": {"type": "string"},
                            "amount": {"type": "number"}}).streams()[0]
    table = read_all(stream)
    bad = rejected(table)
    assert [(r["key"], r["record"]) for r in bad] == [
        ("a.csv", 1), ("a.csv", 2), ("a.csv", 3), ("a.csv", 4), ("d.csv", 0)]
    reasons = {r["record"]: r["reasons"] for r in bad if r["key"] == "a.csv"}
    # every row keeps its own number: the ragged ones do not shift the rows after them
    assert any("expected 3 columns, got 4 (line 3)" in x for x in reasons[1])
    assert any("expected 3 columns, got 1 (line 4)" in x for x in reasons[2])
    assert any("expected double" in x for x in reasons[3])
    assert any("UTF-8" in x for x in reasons[4])
    good = [r for r in table.to_pylist() if r["_source_key"] == "a.csv" and not r["_hw_notes"]]
    assert [(r["_source_record"], r["id"], r["name"]) for r in good] == [(0, 1, "a"),
                                                                         (5, 6, "f")]
    assert table.num_rows == 6 + 1  # a.csv: 4 read + 2 ragged; d.csv: 1 ragged


def test_unreadable_parquet_and_avro_are_one_reject_each(tmp_path: Path) -> None:
    write(tmp_path, "a.parquet", b"PAR1 this is not parquet")
    write(tmp_path, "b.avro", encode(ROWS, "avro")[:-40])
    # (a good object beside each: sampled alone, a damaged one fails the plan, see
    # test_sampling.py)
    write(tmp_path, "c.parquet", encode(ROWS[:2], "parquet"))
    table = read_all(source(str(tmp_path), globs=["*.parquet"],
                            format={"type": "parquet"}).streams()[0])
    assert [(r["key"], r["record"]) for r in rejected(table)] == [("a.parquet", 0)]
    assert table.num_rows == 1 + 2
    write(tmp_path, "d.avro", encode(ROWS[:2], "avro"))
    avro = read_all(source(str(tmp_path), globs=["*.avro"],
                           format={"type": "avro"}).streams()[0])
    bad = rejected(avro)
    assert len(bad) == 1 and bad[0]["key"] == "b.avro"
    assert avro.num_rows == bad[0]["record"] + 1 + 2
