"""A Headwater sync of the ``sample`` source into Iceberg against a plain Spark job doing the same.

Issue 19's benchmark: ``--rows`` (default 5,000,000) ``users`` rows of the
``sample`` source into a new Iceberg table, three ways, each a whole command
in a new process (see ``_iceberg.py``):

* **headwater**: ``headwater sync FILE --json``, ``users`` full_refresh + append
  into the embedded SQLite catalog (tasks write Parquet, PyIceberg commits one
  snapshot per checkpoint), the engine's default checkpoint size unless
  ``--per-checkpoint``;
* **plain Spark 4.1 + Iceberg** (the baseline): ``spark.range(P).mapInArrow(fn)``
  with ``fn`` the same stream's own reader over the same P partitions, written
  with ``writeTo(...).create()`` (Iceberg's Spark runtime 1.12.0, Hadoop
  catalog); no metadata columns, one job, one snapshot;
* **PyIceberg append**: one process reads every partition, then
  ``table.append(arrow)``.

Each run writes a new warehouse; its rows are read back with PyIceberg and
must be the ``--rows`` ids, each once.  Medians of ``--repeat`` runs.

Run: ``bench/setup-alternatives spark41-iceberg && flock /tmp/hw-bench.lock
.venv/bin/python bench/iceberg_sync_vs_plain_spark.py [--rows 5000000 --repeat 3]``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import _iceberg as bench
import yaml
from _common import header, scratch_dir


def connection(folder: Path, rows: int, rows_per_partition: int,
               per_checkpoint: int | None, master: str) -> Path:
    document: dict[str, Any] = {
        "name": "bench-iceberg",
        "source": {"type": "sample", "config": {"seed": 42, "users": rows, "orders": 0,
                                                "rows_per_partition": rows_per_partition}},
        # The SQLite catalog these figures were first taken on (the default is hadoop
        # now): named, so the recorded figures stay comparable until re-taken.
        "destination": {"type": "iceberg", "config": {"warehouse": str(folder / "warehouse"),
                                                      "catalog": {"type": "sql"}}},
        "streams": [{"name": "users", "sync_mode": "full_refresh",
                     "destination_sync_mode": "append"}],
        "metadata_store": f"sqlite:///{folder / 'headwater.db'}",
        "spark": {"master": master},
    }
    if per_checkpoint is not None:
        document["checkpoint"] = {"partitions_per_checkpoint": per_checkpoint}
    path = folder / "bench.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--rows-per-partition", type=int, default=100_000)
    parser.add_argument("--per-checkpoint", type=int, default=None,
                        help="Headwater's partitions_per_checkpoint (default: the engine's)")
    bench.add_options(parser)
    args = parser.parse_args()

    header("Headwater sync vs plain Spark 4.1 -> Iceberg (sample users)",
           [Path(sys.executable).name, *sys.argv])
    partitions = -(-args.rows // args.rows_per_partition)
    print(f"{args.rows:,} sample users rows in {partitions} partitions; master {args.master}; "
          f"checkpoint: {args.per_checkpoint or 'engine default'} partitions\n", flush=True)
    sizes = ["--rows", str(args.rows), "--rows-per-partition", str(args.rows_per_partition)]
    runs = bench.writers(
        args,
        bench.headwater_run(lambda folder: connection(folder, args.rows, args.rows_per_partition,
                                                args.per_checkpoint, args.master), "users"),
        bench.spark41_run("sample", "users", ["--master", args.master, *sizes]),
        bench.pyiceberg_run("sample", "users", sizes))
    with scratch_dir("hw-bench-iceberg-", keep=args.keep) as scratch:
        results = bench.measure(runs, args.repeat, scratch, args.rows)

    bench.report(results, args.rows,
           "Headwater's table also has the _hw_* metadata columns; the others do not.")


if __name__ == "__main__":
    main()
