"""What three expectations cost a sync: the same `sample` users rows synced with and
without them, alternately, in one Spark session (issue 38's aim: >= 0.9).

* **without**: ``full_refresh`` + ``append`` of ``users`` into a new Delta folder, the
  default writer (the tasks write the Parquet files, delta-rs commits them);
* **in the tasks**: the same connection plus ``warn`` (``age < 80``), ``drop``
  (``age >= 20``) and ``fail`` (``email LIKE '%@%'``), compiled to pyarrow compute and
  run inside the Python tasks before they write the files
  (:mod:`headwater.expectations._arrow`);
* **quarantine in the tasks**: ``warn`` and ``drop`` as above plus ``quarantine``
  (``country <> 'DE'``): the tasks evaluate them and write the kept rows' files and the
  quarantined rows' files (the quarantine table's, :mod:`headwater.expectations._split`);
  the driver commits the quarantine table, then the table;
* **quarantine in Spark**: the same with ``upper(country) <> 'DE'`` (a function call, which
  the tasks leave to Spark): Spark evaluates them on the rows the tasks typed, which are
  persisted for the counts, then both tables' rows are written by their file-writing
  tasks (:mod:`headwater.expectations._checks`).

The session is warmed up by one small sync of each kind first.  Every run writes a new
folder; the rows each commits are checked (the table's plus the quarantine table's plus
the dropped ones make the rows read).  Figures: seconds per run, rows/s and the ratio of
the medians (with / without).  ``--no-spark-variant``: leave the Spark path out.

Run: ``.venv/bin/python bench/expectations_overhead.py [--rows 5000000] [--rounds 2]``
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml
from _common import header, load_line, median, scratch_dir, table, timed_headwater_sync

from headwater.engine import SparkSettings, get_spark

#: Evaluated inside the Python tasks (pyarrow compute), the rows written as without.
IN_TASK = [
    {"name": "not_senior", "expr": "age < 80", "action": "warn"},
    {"name": "grown_up", "expr": "age >= 20", "action": "drop"},
    {"name": "has_email", "expr": "email LIKE '%@%'", "action": "fail"},
]
#: With a quarantine the tasks evaluate: they write both tables' files.
QUARANTINE_IN_TASK = [*IN_TASK[:2], {"name": "not_de", "expr": "country <> 'DE'",
                                     "action": "quarantine"}]
#: With a quarantine Spark evaluates (a function call): the rows persisted, then written.
IN_SPARK = [*IN_TASK[:2], {"name": "not_de", "expr": "upper(country) <> 'DE'",
                           "action": "quarantine"}]
VARIANTS: dict[str, list[dict[str, str]] | None] = {
    "without": None, "warn+drop+fail (in the tasks)": IN_TASK,
    "warn+drop+quarantine (in the tasks)": QUARANTINE_IN_TASK,
    "warn+drop+quarantine (in Spark)": IN_SPARK}


def connection(folder: Path, name: str, rows: int, per_partition: int,
               checks: list[dict[str, str]] | None) -> Path:
    stream: dict[str, Any] = {"name": "users", "sync_mode": "full_refresh",
                              "destination_sync_mode": "append"}
    if checks:
        stream["expectations"] = checks
    document = {
        "name": name,
        "source": {"type": "sample", "config": {"users": rows, "orders": 0, "seed": 7,
                                                "rows_per_partition": per_partition}},
        "destination": {"type": "delta", "config": {"path": str(folder / "lake")}},
        "streams": [stream],
        "metadata_store": f"sqlite:///{folder / 'meta.db'}",
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rows-per-partition", type=int, default=125_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--no-spark-variant", dest="spark_variant", action="store_false")
    args = parser.parse_args()
    header("Expectations: a sync with three against the same sync without",
           [sys.executable.split("/")[-1], *sys.argv])

    with scratch_dir("hw-bench-expect-") as scratch:
        get_spark(SparkSettings(master=args.master, app_name="headwater-bench",
                                jvm_log_path=scratch / "spark.log"))
        print("warm-up (one small sync of each kind)", flush=True)
        variants = {label: checks for label, checks in VARIANTS.items()
                    if args.spark_variant or checks is not IN_SPARK}
        for number, checks in enumerate(variants.values()):
            timed_headwater_sync(connection(scratch / f"warm-{number}", f"v{number}", 20_000,
                                            10_000, checks))
        seconds: dict[str, list[float]] = {label: [] for label in variants}
        for round_ in range(args.rounds):
            for number, (label, checks) in enumerate(variants.items()):
                folder = scratch / f"{number}-{round_}"
                path = connection(folder, f"v{number}", args.rows, args.rows_per_partition,
                                  checks)
                elapsed, result = timed_headwater_sync(path)
                (stream,) = result.streams
                assert stream.records_read == args.rows, stream.to_dict()
                if checks:
                    dropped = stream.expectations["grown_up"]["failed"]
                    assert dropped > 0 and stream.records_written <= args.rows - dropped, \
                        stream.to_dict()
                if checks and "not_de" in stream.expectations:
                    assert stream.expectations["not_de"]["failed"] > 0, stream.to_dict()
                seconds[label].append(elapsed)
                print(f"  {label} round {round_ + 1}: {elapsed:6.1f} s  ({load_line()})",
                      flush=True)
    rows = [(label, ", ".join(f"{s:.1f}" for s in runs), f"{median(runs):.1f}",
             f"{args.rows / median(runs):,.0f}") for label, runs in seconds.items()]
    print()
    print(table(["sync", "seconds per run", "median s", "rows/s"], rows))
    base = median(seconds["without"])
    for label, runs in seconds.items():
        if label != "without":
            print(f"{label} / without (rows/s of the medians): {base / median(runs):.2f}"
                  "  (aim >= 0.9)")
    print(f"end: {load_line()}")


if __name__ == "__main__":
    main()
