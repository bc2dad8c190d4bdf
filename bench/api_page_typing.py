"""CPU-seconds of typing HTTP API pages into Arrow: the bulk path against the value-by-value one.

No Spark, no server: ``--records`` API-shaped records, ``--page`` to a page,
are decoded from JSON (each page's bytes with the HTTP client's own
``decode_json``, orjson) and typed into Arrow batches of the stream's schema (what
``headwater.sdk.http._records.records_batch`` does for each batch of pages in
a task).  Two shapes: *flat* (integers, a number, a boolean, a string and an
ISO 8601 date-time) and *nested* (the flat columns plus an object, an array of
strings and an array of objects holding a date-time).

Typing is measured twice over the same pages, back to back and interleaved
``--repeat`` times: ``old`` is the value-by-value function kept under tests
(``tests/unit/table_schema/_records_reference.py``, the engine's function before
the bulk path), ``new`` is :func:`headwater.table_schema.batch_from_records`;
their columns and notes are checked equal.  Figures are CPU-seconds of this
process (``time.process_time``, medians, Python's cyclic garbage collector off
while a step runs), which the load of other processes on the machine barely
moves, and the ratio old / new (> 1: the bulk path is faster).
The decoding of the same pages is shown for scale: it is paid either way.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import header, load_line, table
from headwater.sdk.http._client import decode_json
from headwater.sdk.http._stream import BATCH_ROWS
from headwater.table_schema import arrow_schema_for, batch_from_records
from tests.unit.table_schema._records_reference import batch_from_records as old_typing

FLAT: dict[str, Any] = {"type": "object", "properties": {
    "id": {"type": "integer"},
    "survey_id": {"type": "integer"},
    "answer": {"type": "string"},
    "score": {"type": "number"},
    "done": {"type": "boolean"},
    "updated_at": {"type": "string", "format": "date-time"},
}}
NESTED: dict[str, Any] = {"type": "object", "properties": {
    **FLAT["properties"],
    "address": {"type": "object", "properties": {"city": {"type": "string"},
                                                 "zip": {"type": "integer"}}},
    "tags": {"type": "array", "items": {"type": "string"}},
    "contacts": {"type": "array", "items": {"type": "object", "properties": {
        "email": {"type": "string"}, "at": {"type": "string", "format": "date-time"}}}},
}}


def record(i: int, nested: bool) -> dict[str, Any]:
    """One API record; its date-times as APIs write them (microseconds, ``Z`` or an offset)."""
    found: dict[str, Any] = {
        "id": i, "survey_id": i // 25, "answer": f"answer {i}", "score": i / 4,
        "done": i % 3 == 0,
        "updated_at": f"2024-0{1 + i % 9}-1{i % 10}T1{i % 10}:2{i % 10}:00.{i % 999_999:06d}"
                      + ("Z" if i % 2 else "+02:00"),
    }
    if nested:
        found["address"] = {"city": f"city {i % 50}", "zip": 10_000 + i % 90_000}
        found["tags"] = [f"t{i % 7}", f"t{i % 11}"]
        found["contacts"] = [{"email": f"{i}-{k}@example.com",
                              "at": f"2023-12-0{1 + k}T08:00:00Z"} for k in range(i % 3)]
    return found


def pages(count: int, page: int, nested: bool) -> list[bytes]:
    """The API's response bodies (a page of records each), as bytes."""
    return [json.dumps([record(i, nested) for i in range(start, min(start + page, count))])
            .encode() for start in range(0, count, page)]


def cpu(step: Callable[[], Any]) -> tuple[float, Any]:
    """CPU-seconds of ``step``, Python's cyclic garbage collector held off: how often it
    runs depends on how many objects the benchmark keeps alive, not on the step."""
    gc.collect()
    gc.disable()
    try:
        began = time.process_time()
        result = step()
        return time.process_time() - began, result
    finally:
        gc.enable()


def typed(typing: Callable[..., Any], decoded: list[list[dict[str, Any]]],
          schema: pa.Schema, batch_pages: int) -> list[Any]:
    """Typing as a task does it: pages gathered into batches of ``batch_pages`` pages."""
    out = []
    for start in range(0, len(decoded), batch_pages):
        rows = [r for page in decoded[start:start + batch_pages] for r in page]
        columns, notes = typing(rows, schema)
        out.append(([c.to_pylist() for c in columns], notes.to_lists()) if start == 0
                   else (columns, notes.any()))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--page", type=int, default=100, help="records a page")
    parser.add_argument("--batch-pages", type=int, default=None,
                        help="pages typed together (default: the stream's BATCH_ROWS / page)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    args.batch_pages = args.batch_pages or max(1, BATCH_ROWS // args.page)
    header("Typing API pages into Arrow: bulk vs value by value (CPU-seconds)", sys.argv)
    rows = []
    for shape, json_schema in (("flat", FLAT), ("nested", NESTED)):
        schema = arrow_schema_for(json_schema)
        bodies = pages(args.records, args.page, shape == "nested")
        figures: dict[str, list[float]] = {"decode": [], "old": [], "new": []}
        for _ in range(args.repeat):
            seconds, decoded = cpu(lambda b=bodies: [decode_json(body) for body in b])
            figures["decode"].append(seconds)
            old_s, old_out = cpu(lambda d=decoded, s=schema: typed(
                old_typing, d, s, args.batch_pages))
            new_s, new_out = cpu(lambda d=decoded, s=schema: typed(
                batch_from_records, d, s, args.batch_pages))
            figures["old"].append(old_s)
            figures["new"].append(new_s)
            check(old_out, new_out)
        decode_s, old_s, new_s = (statistics.median(figures[k])
                                for k in ("decode", "old", "new"))
        rows.append([shape, args.records, f"{decode_s:.3f}", f"{old_s:.3f}", f"{new_s:.3f}",
                     f"{old_s / new_s:.2f}", f"{args.records / new_s:,.0f}"])
    print(table(["shape", "records", "decode (orjson) CPU-s", "old typing CPU-s",
                 "new typing CPU-s", "old / new", "records per CPU-s (new)"], rows))
    print()
    print(f"end:     {load_line()}")


def check(old: list[Any], new: list[Any]) -> None:
    """The two paths gave the same columns (types and values) and notes."""
    for (old_columns, old_notes), (new_columns, new_notes) in zip(old, new, strict=True):
        if isinstance(old_notes, bool):
            same = (old_notes == new_notes and len(old_columns) == len(new_columns)
                    and all(a.equals(b) for a, b in zip(old_columns, new_columns, strict=True)))
        else:
            same = old_columns == new_columns and old_notes == new_notes
        if not same:
            raise SystemExit("the bulk path's batch differs from the value-by-value one")


if __name__ == "__main__":
    main()
