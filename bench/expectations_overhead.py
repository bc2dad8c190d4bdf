"""What three expectations cost a sync: the same `sample` users rows synced with and
without them, alternately, in one Spark session (issue 38's aim: >= 0.9).

* **without**: ``full_refresh`` + ``append`` of ``users`` into a new Delta folder, the
  default writer (the tasks write the Parquet files, delta-rs commits them);
* **with**: the same connection plus ``warn`` (``age < 80``), ``drop`` (``age >= 20``)
  and ``quarantine`` (``country <> 'DE'``): Spark evaluates them on the rows the
  tasks typed, which are persisted for the counts, the quarantine table and the commit
  (Spark's Delta writer: :mod:`headwater.expectations._checks`).

The session is warmed up by one small sync of each kind first.  Every run writes a new
folder; the rows each commits are checked (the table's plus the quarantine table's plus
the dropped ones make the rows read).  Figures: seconds per run, rows/s and the ratio of
the medians (with / without).

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

CHECKS = [
    {"name": "not_senior", "expr": "age < 80", "action": "warn"},
    {"name": "grown_up", "expr": "age >= 20", "action": "drop"},
    {"name": "not_de", "expr": "country <> 'DE'", "action": "quarantine"},
]


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
    args = parser.parse_args()
    header("Expectations: a sync with three against the same sync without",
           [sys.executable.split("/")[-1], *sys.argv])

    with scratch_dir("hw-bench-expect-") as scratch:
        get_spark(SparkSettings(master=args.master, app_name="headwater-bench",
                                jvm_log_path=scratch / "spark.log"))
        print("warm-up (one small sync of each kind)", flush=True)
        for label, checks in (("plain", None), ("checks", CHECKS)):
            timed_headwater_sync(connection(scratch / f"warm-{label}", label, 20_000, 10_000,
                                            checks))
        seconds: dict[str, list[float]] = {"without": [], "with": []}
        for round_ in range(args.rounds):
            for label, checks in (("without", None), ("with", CHECKS)):
                folder = scratch / f"{label}-{round_}"
                path = connection(folder, label, args.rows, args.rows_per_partition, checks)
                elapsed, result = timed_headwater_sync(path)
                (stream,) = result.streams
                assert stream.records_read == args.rows, stream.to_dict()
                if checks:
                    counts = stream.expectations
                    dropped = counts["grown_up"]["failed"]
                    assert stream.records_written <= args.rows - max(
                        dropped, counts["not_de"]["failed"]), stream.to_dict()
                seconds[label].append(elapsed)
                print(f"  {label:>7} round {round_ + 1}: {elapsed:6.1f} s  ({load_line()})",
                      flush=True)
    rows = [(label, ", ".join(f"{s:.1f}" for s in runs), f"{median(runs):.1f}",
             f"{args.rows / median(runs):,.0f}") for label, runs in seconds.items()]
    print()
    print(table(["sync", "seconds per run", "median s", "rows/s"], rows))
    print(f"\nwith / without (rows/s of the medians): "
          f"{median(seconds['without']) / median(seconds['with']):.2f}  (aim >= 0.9)")
    print(f"end: {load_line()}")


if __name__ == "__main__":
    main()
