"""PyIceberg's own writer, the second reference of the Iceberg benchmarks: ``table.append(arrow)``.

One Python process, no Spark: every row is read into one Arrow table (the
``sample`` source's ``users`` reader over the same partitions Headwater plans,
or ``pyarrow.json.read_json`` of each JSON Lines file with the benchmark's
schema), then appended in one snapshot to a new table of a SQLite catalog in
``--warehouse``.  Prints one JSON line: ``read_s`` and ``append_s``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import pyarrow as pa

CATALOG_NAME = "headwater"


def sample_rows(rows: int, rows_per_partition: int) -> pa.Table:
    from headwater.connectors.sample import SampleSource

    stream = SampleSource({"seed": 42, "users": rows, "orders": 0,
                           "rows_per_partition": rows_per_partition}).stream("users")
    batches = [batch for p in stream.partitions(None) for batch in stream.read(p)]
    return pa.Table.from_batches(batches)


def json_rows(folder: Path) -> pa.Table:
    import pyarrow.json as pa_json

    schema = pa.schema([("id", pa.int64()), ("user_id", pa.int64()), ("amount", pa.float64()),
                        ("currency", pa.string()), ("status", pa.string()),
                        ("created_at", pa.timestamp("us", tz="UTC"))])
    options = pa_json.ParseOptions(explicit_schema=schema)
    return pa.concat_tables(pa_json.read_json(path, parse_options=options)
                            for path in sorted(folder.glob("*.jsonl")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["sample", "json"])
    parser.add_argument("--warehouse", type=Path, required=True)
    parser.add_argument("--table", required=True)
    parser.add_argument("--rows", type=int, default=0)
    parser.add_argument("--rows-per-partition", type=int, default=100_000)
    parser.add_argument("--folder", type=Path)
    args = parser.parse_args()

    from pyiceberg.catalog import load_catalog

    began = time.perf_counter()
    data = (sample_rows(args.rows, args.rows_per_partition) if args.what == "sample"
            else json_rows(args.folder))
    read = time.perf_counter()
    args.warehouse.mkdir(parents=True, exist_ok=True)
    catalog = load_catalog(CATALOG_NAME, type="sql",
                           uri=f"sqlite:///{args.warehouse}/catalog.db",
                           warehouse=f"file://{args.warehouse}")
    catalog.create_namespace_if_not_exists("bench")
    table = catalog.create_table(f"bench.{args.table}", schema=data.schema)
    table.append(data)
    done = time.perf_counter()
    print(json.dumps({"read_s": read - began, "append_s": done - read}), flush=True)


if __name__ == "__main__":
    main()
