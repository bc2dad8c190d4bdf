"""Typing Airbyte RECORD lines into Arrow, per record vs in bulk; no Spark.

The ``airbyte`` source type's own cost, apart from Spark and Delta: the faker
connector's ``read`` of ``--users`` users is written to a file once, then its
RECORD lines go, in the blocks the connector runner hands over, through

1. the per-record path (``json.loads`` per line, then the engine's
   ``batch_from_records`` per 10,000 dicts): what every block took before bulk
   decoding, and what a block bulk decoding refuses still takes;
2. the bulk path (``RecordDecoder.decode`` per block, then the engine's
   ``conform_batch``): what ``AirbyteSourceStream.read`` yields now.

Both must give the same table (checked).  The baseline is the connector's own
``read`` into /dev/null, timed in the same run.  Usage::

    .venv/bin/python bench/airbyte_decode.py --users 200000
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import header, load_line, scratch_dir, table
from bench.airbyte_faker import connector_read
from headwater.connectors.airbyte._process import (
    BLOCK_BYTES,
    BLOCK_LINES,
    RECORD_PREFIX,
    RecordBlock,
)
from headwater.connectors.airbyte._records import RecordDecoder
from headwater.table_schema import arrow_schema_for, batch_from_records, conform_batch

DICT_BATCH_ROWS = 10_000  # as the engine gathers dicts


def blocks(path: Path) -> list[RecordBlock]:
    """The RECORD lines in the blocks ``run_connector`` hands over."""
    out: list[RecordBlock] = []
    lines: list[str] = []
    size = 0
    with open(path) as source:
        for line in source:
            if not line.startswith(RECORD_PREFIX):
                continue
            lines.append(line)
            size += len(line)
            if len(lines) >= BLOCK_LINES or size >= BLOCK_BYTES:
                out.append(RecordBlock(lines, "faker"))
                lines, size = [], 0
    if lines:
        out.append(RecordBlock(lines, "faker"))
    return out


def per_record(found: list[RecordBlock], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    pending: list[dict[str, object]] = []
    for block in found:
        for record in block.records():
            pending.append(record.data)
            if len(pending) >= DICT_BATCH_ROWS:
                yield pa.RecordBatch.from_arrays(batch_from_records(pending, schema)[0],
                                                 schema=schema)
                pending = []
    if pending:
        yield pa.RecordBatch.from_arrays(batch_from_records(pending, schema)[0], schema=schema)


def bulk(found: list[RecordBlock], schema: pa.Schema,
         json_schema: dict[str, object]) -> Iterator[pa.RecordBatch]:
    decoder = RecordDecoder("users", json_schema)
    for block in found:
        batch = decoder.decode(block.lines)
        if batch is None:
            raise SystemExit("the bulk decoder refused a block of faker users")
        yield pa.RecordBatch.from_arrays(conform_batch(batch, schema)[0], schema=schema)


def best_of(repeat: int, run: Callable[[], Iterator[pa.RecordBatch]]) -> tuple[float, pa.Table]:
    seconds = float("inf")
    result = pa.table({})
    for _ in range(repeat):
        started = time.perf_counter()
        result = pa.Table.from_batches(list(run()))
        seconds = min(seconds, time.perf_counter() - started)
    return seconds, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=200_000)
    parser.add_argument("--parallelism", type=int, default=2, help="faker's worker processes")
    parser.add_argument("--repeat", type=int, default=3, help="best of this many timings")
    args = parser.parse_args()
    header("Airbyte RECORD lines into Arrow: per record vs bulk", sys.argv)
    config = {"count": args.users, "seed": 1, "records_per_slice": 1000,
              "parallelism": args.parallelism, "always_updated": False}
    with scratch_dir("hw-bench-airbyte-decode-") as folder:
        alone, json_schema, _ = connector_read(config, folder, None)
        connector_read(config, folder, folder / "read.jsonl")
        found = blocks(folder / "read.jsonl")
    schema = arrow_schema_for(json_schema)
    records = sum(len(block.lines) for block in found)
    old_s, old = best_of(args.repeat, lambda: per_record(found, schema))
    new_s, new = best_of(args.repeat, lambda: bulk(found, schema, json_schema))
    if not new.equals(old):
        raise SystemExit("the bulk path gave a different table from the per-record path")
    rows = [["connector read > /dev/null (baseline)", args.users, f"{alone:.2f}",
             f"{args.users / alone:,.0f}"],
            ["per record: json.loads + batch_from_records", records, f"{old_s:.2f}",
             f"{records / old_s:,.0f}"],
            ["bulk: RecordDecoder + conform_batch", records, f"{new_s:.2f}",
             f"{records / new_s:,.0f}"]]
    print(table(["run", "records", "seconds", "records/s"], rows))
    print(f"\nbulk vs per record: {old_s / new_s:.1f}x; tables identical")
    print(f"end:     {load_line()}")


if __name__ == "__main__":
    main()
