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

* **rescue** (``--rescue``, two more variants): the source at ``schema_version: 2``
  (``users`` gain ``loyalty_tier``) into a table a small untimed sync made at version
  1, so every row carries a column the table does not have: **without** lets the
  default contract evolve the table (the column is added, its values land typed);
  **warn+drop+fail + rescue** adds the three in-task expectations and
  ``schema_contract: {new_columns: rescue}``: the tasks move each row's
  ``loyalty_tier`` into ``_hw_rescued`` as JSON (checked in the table afterwards).
  ``--rescue-only`` runs just these two.

The session is warmed up by one small sync of each kind first.  Every run writes a new
folder; the rows each commits are checked (the table's plus the quarantine table's plus
the dropped ones make the rows read).  Figures: seconds per run, rows/s and the ratio of
the medians (with / without).  ``--no-spark-variant``: leave the Spark path out.

Run: ``.venv/bin/python bench/expectations_overhead.py [--rows 5000000] [--rounds 2]``
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
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
#: The contract of the rescue variant: new columns kept as JSON in ``_hw_rescued``.
RESCUE = {"new_columns": "rescue"}


@dataclass(frozen=True)
class Variant:
    """One kind of sync: its expectations, its contract, and whether it meets a new column
    (the source at schema version 2 into a table made at version 1)."""

    checks: list[dict[str, str]] | None = None
    contract: dict[str, str] | None = None
    grown: bool = False
    #: The variant this one's ratio is taken against.
    base: str = "without"


VARIANTS: dict[str, Variant] = {
    "without": Variant(), "warn+drop+fail (in the tasks)": Variant(IN_TASK),
    "warn+drop+quarantine (in the tasks)": Variant(QUARANTINE_IN_TASK),
    "warn+drop+quarantine (in Spark)": Variant(IN_SPARK)}
RESCUE_VARIANTS: dict[str, Variant] = {
    "without, a new column (evolve)": Variant(grown=True),
    "warn+drop+fail + rescue (in the tasks)": Variant(
        IN_TASK, RESCUE, grown=True, base="without, a new column (evolve)")}


def connection(folder: Path, name: str, rows: int, per_partition: int, variant: Variant,
               schema_version: int = 1) -> Path:
    stream: dict[str, Any] = {"name": "users", "sync_mode": "full_refresh",
                              "destination_sync_mode": "append"}
    if variant.checks:
        stream["expectations"] = variant.checks
    if variant.contract:
        stream["schema_contract"] = variant.contract
    document = {
        "name": name,
        "source": {"type": "sample", "config": {"users": rows, "orders": 0, "seed": 7,
                                                "rows_per_partition": per_partition,
                                                "schema_version": schema_version}},
        "destination": {"type": "delta", "config": {"path": str(folder / "lake")}},
        "streams": [stream],
        "metadata_store": f"sqlite:///{folder / 'meta.db'}",
    }
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def prepared(folder: Path, name: str, rows: int, per_partition: int,
             variant: Variant) -> Path:
    """The connection of one timed sync in ``folder``; a variant meeting a new column first
    gets its table from a small untimed sync at schema version 1."""
    if variant.grown:
        timed_headwater_sync(connection(folder, name, 10_000, 10_000, Variant()))
    return connection(folder, name, rows, per_partition, variant,
                      schema_version=2 if variant.grown else 1)


def rescued_rows(spark: Any, folder: Path) -> int:
    """Rows of the table whose ``_hw_rescued`` holds a value (the rescue path ran)."""
    frame = spark.read.format("delta").load(str(folder / "lake" / "users"))
    return int(frame.where("_hw_rescued IS NOT NULL").count())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rows-per-partition", type=int, default=125_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--no-spark-variant", dest="spark_variant", action="store_false")
    parser.add_argument("--rescue", action="store_true",
                        help="also the two variants meeting a new column (with rescue)")
    parser.add_argument("--rescue-only", action="store_true", help="only those two")
    args = parser.parse_args()
    header("Expectations: a sync with three against the same sync without",
           [sys.executable.split("/")[-1], *sys.argv])

    with scratch_dir("hw-bench-expect-") as scratch:
        spark = get_spark(SparkSettings(master=args.master, app_name="headwater-bench",
                                        jvm_log_path=scratch / "spark.log"))
        print("warm-up (one small sync of each kind)", flush=True)
        variants = {} if args.rescue_only else {
            label: v for label, v in VARIANTS.items()
            if args.spark_variant or v.checks is not IN_SPARK}
        if args.rescue or args.rescue_only:
            variants.update(RESCUE_VARIANTS)
        for number, variant in enumerate(variants.values()):
            timed_headwater_sync(prepared(scratch / f"warm-{number}", f"v{number}", 20_000,
                                          10_000, variant))
        seconds: dict[str, list[float]] = {label: [] for label in variants}
        for round_ in range(args.rounds):
            for number, (label, variant) in enumerate(variants.items()):
                folder = scratch / f"{number}-{round_}"
                path = prepared(folder, f"v{number}", args.rows, args.rows_per_partition,
                                variant)
                elapsed, result = timed_headwater_sync(path)
                (stream,) = result.streams
                assert stream.records_read == args.rows, stream.to_dict()
                if variant.checks:
                    dropped = stream.expectations["grown_up"]["failed"]
                    assert dropped > 0 and stream.records_written <= args.rows - dropped, \
                        stream.to_dict()
                if variant.checks and "not_de" in stream.expectations:
                    assert stream.expectations["not_de"]["failed"] > 0, stream.to_dict()
                if variant.contract:
                    rescued = rescued_rows(spark, folder)
                    assert rescued == stream.records_written, (rescued, stream.to_dict())
                seconds[label].append(elapsed)
                steps = {k: round(v, 1) for k, v in result.steps_s.items() if v >= 0.1}
                print(f"  {label} round {round_ + 1}: {elapsed:6.1f} s  ({load_line()}) "
                      f"steps {steps}", flush=True)
    rows = [(label, ", ".join(f"{s:.1f}" for s in runs), f"{median(runs):.1f}",
             f"{args.rows / median(runs):,.0f}") for label, runs in seconds.items()]
    print()
    print(table(["sync", "seconds per run", "median s", "rows/s"], rows))
    for label, runs in seconds.items():
        base = variants[label].base
        if (variants[label].checks or variants[label].contract) and base in seconds:
            print(f"{label} / {base} (rows/s of the medians): "
                  f"{median(seconds[base]) / median(runs):.2f}  (aim >= 0.9)")
    print(f"end: {load_line()}")


if __name__ == "__main__":
    main()
