"""A Headwater ``object_storage`` sync of JSON Lines into Iceberg against ``spark.read.json``.

Issue 19's benchmark: ``--rows`` (default 2,000,000) rows in ``--files`` local
JSON Lines files (the rows and schema of ``object_storage_vs_spark_reader.py``),
landed in a new Iceberg table three ways, each a whole command in a new
process (see ``_iceberg.py``):

* **headwater**: ``headwater sync FILE --json`` of an ``object_storage``
  connection over the folder with the explicit schema, full_refresh + append
  into the embedded SQLite catalog, one checkpoint (``partitions_per_checkpoint:
  64``, as the Delta benchmark);
* **plain Spark 4.1 + Iceberg** (the baseline): ``spark.read.schema(S).json(folder)``
  with the same explicit schema, ``writeTo(...).create()`` (Iceberg's Spark
  runtime 1.12.0, Hadoop catalog);
* **PyIceberg append**: ``pyarrow.json.read_json`` of each file with the schema,
  one Arrow table, ``table.append(arrow)``.

Each run writes a new warehouse; its rows are read back with PyIceberg and
must be the ``--rows`` ids, each once.  Medians of ``--repeat`` runs.

Run: ``bench/setup-alternatives spark41-iceberg && flock /tmp/hw-bench.lock
.venv/bin/python bench/iceberg_object_storage_vs_spark_json.py [--rows 2000000 --repeat 3]``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import _iceberg as bench
import yaml
from _common import header, scratch_dir
from object_storage_vs_spark_reader import JSON_SCHEMA, SPARK_SCHEMA, write_files


def connection(folder: Path, files: Path, master: str) -> Path:
    document = {
        "name": "bench-iceberg-jsonl",
        "source": {"type": "object_storage", "config": {
            "url": str(files),
            "streams": [{"name": "jsonl", "globs": ["*.jsonl"], "format": {"type": "jsonl"},
                         "schema": JSON_SCHEMA}]}},
        # The SQLite catalog these figures were first taken on (the default is hadoop
        # now): named, so the recorded figures stay comparable until re-taken.
        "destination": {"type": "iceberg", "config": {"warehouse": str(folder / "warehouse"),
                                                      "catalog": {"type": "sql"}}},
        "streams": [{"name": "jsonl", "sync_mode": "full_refresh",
                     "destination_sync_mode": "append"}],
        "metadata_store": f"sqlite:///{folder / 'headwater.db'}",
        "checkpoint": {"partitions_per_checkpoint": 64},
        "spark": {"master": master},
    }
    path = folder / "bench.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--files", type=int, default=8)
    bench.add_options(parser)
    args = parser.parse_args()

    header("Headwater object_storage sync vs spark.read.json on Spark 4.1 -> Iceberg",
           [Path(sys.executable).name, *sys.argv])
    with scratch_dir("hw-bench-iceberg-jsonl-", keep=args.keep) as scratch:
        files = scratch / "in-jsonl"
        write_files(files, "jsonl", args.rows, args.files)
        size = sum(f.stat().st_size for f in files.iterdir())
        print(f"{args.rows:,} rows in {args.files} JSON Lines files, {size / 2**20:,.0f} MiB; "
              f"master {args.master}\n", flush=True)
        runs = bench.writers(
            args,
            bench.headwater_run(lambda folder: connection(folder, files, args.master), "jsonl"),
            bench.spark41_run("json", "jsonl", ["--master", args.master, "--folder", str(files),
                                          "--schema", SPARK_SCHEMA]),
            bench.pyiceberg_run("json", "jsonl", ["--folder", str(files)]))
        results = bench.measure(runs, args.repeat, scratch, args.rows)

    bench.report(results, args.rows,
           "Headwater's table also has the _hw_* metadata columns and per-row type notes; "
          "the others do not.")


if __name__ == "__main__":
    main()
