"""Fixed cost of a tiny sync, end to end, against the cost of merely starting Spark.

Every figure is the wall time of a fresh process, from start to exit:

* **baseline**: ``python -c`` starting ``SparkSession.builder.master('local[*]')``
  with Headwater's own Spark conf (Delta package, extensions, catalog, Python
  workers; taken from ``headwater.engine._spark``) and running
  ``spark.range(1).count()``: the floor any Spark-based sync pays.
* **references** (not Headwater): ``python -c "import ..."`` of the CLI, the
  engine, the Delta destination and the sample source with no Spark (what Python
  alone costs), and the baseline plus one 100-row Delta write (what Delta's
  first write costs in a new JVM, which any Delta writer pays).
* **first sync**: ``headwater sync FILE --json`` of the sample source (users 100,
  orders 0, both streams full_refresh + overwrite) into a new Delta folder and
  a new SQLite metadata store: creates both tables.
* **repeat sync**: the same command again in the same folder: the tables exist.

``--also-with KEY=VALUE`` times both syncs again with ``headwater sync --conf
KEY=VALUE`` (a way to try a Spark or Delta setting without editing code).

Repetitions are interleaved (baseline, references, first, repeat, baseline, ...)
so a busy machine slows every kind alike; min and median are reported, and the
ratio is against the baseline's figure of the same statistic.

Run: ``.venv/bin/python bench/tiny_sync_fixed_cost.py [--repeat 5]``
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from _common import REPO, header, load_line, median, scratch_dir, table

from headwater.engine import SparkSettings
from headwater.engine._spark import _base_conf

PYTHON = REPO / ".venv" / "bin" / "python"
HEADWATER = REPO / ".venv" / "bin" / "headwater"

IMPORTS = (
    "import headwater.cli.app, headwater.engine, headwater.destinations.delta, "
    "headwater.connectors.sample, pyspark.sql"
)


def spark_code(extra_conf: dict[str, str], delta_write: bool) -> str:
    """A bare Spark start with the conf Headwater itself uses for ``local[*]``; then
    ``range(1).count()``, or (``delta_write``) one 100-row Delta write to ``./delta``."""
    conf = {**_base_conf(SparkSettings(master="local[*]")), **extra_conf}
    action = (
        "spark.range(100).write.format('delta').save('delta')\n"
        if delta_write
        else "spark.range(1).count()\n"
    )
    return (
        "from pyspark.sql import SparkSession\n"
        "builder = SparkSession.builder.master('local[*]').appName('baseline')\n"
        f"for key, value in {conf!r}.items():\n"
        "    builder = builder.config(key, value)\n"
        "spark = builder.getOrCreate()\n" + action
    )


def write_connection(folder: Path, users: int) -> Path:
    document: dict[str, Any] = {
        "name": "tiny",
        "source": {"type": "sample", "config": {"users": users, "orders": 0}},
        "destination": {"type": "delta", "config": {"path": str(folder / "lake")}},
        "metadata_store": f"sqlite:///{folder / 'headwater.db'}",
    }
    path = folder / "tiny.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def timed(command: Sequence[str], cwd: Path, env: dict[str, str]) -> tuple[float, str]:
    """Wall time of one process from start to exit; its stdout; fails loudly on error."""
    began = time.perf_counter()
    done = subprocess.run(
        list(command), cwd=cwd, env=env, capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(
            f"{command[0]} exited {done.returncode}:\n{done.stdout}\n{done.stderr[-3000:]}"
        )
    return seconds, done.stdout


def headwater_sync(
    connection: Path, folder: Path, env: dict[str, str], users: int, conf: Sequence[str]
) -> float:
    command = [str(HEADWATER), "sync", str(connection), "--json"]
    for pair in conf:
        command += ["--conf", pair]
    seconds, stdout = timed(command, folder, env)
    result = json.loads(stdout)
    written = sum(s["records_written"] for s in result["streams"])
    if result["status"] != "succeeded" or written != users:
        raise SystemExit(f"unexpected sync result: {result}")
    return seconds


def _pairs(items: Sequence[str]) -> dict[str, str]:
    pairs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"expected KEY=VALUE, got {item!r}")
        pairs[key.strip()] = value.strip()
    return pairs


BASELINE = "baseline: bare Spark start + range(1).count()"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="Wall time of a tiny `headwater sync --json` (a new process each time) "
        "against a bare Spark start with the same Delta conf.",
    )
    parser.add_argument("--repeat", type=int, default=5, help="repetitions (default 5)")
    parser.add_argument("--users", type=int, default=100, help="users rows (default 100)")
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra Spark conf for every process (repeatable)",
    )
    parser.add_argument(
        "--also-with",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="also time both syncs with this extra Spark conf (`headwater sync --conf`); "
        "repeatable, all pairs together",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temp folder")
    args = parser.parse_args(argv)

    header("Tiny sync fixed cost", [Path(sys.executable).name, *sys.argv])
    env = {**os.environ, "PYSPARK_PYTHON": str(PYTHON), "PYSPARK_DRIVER_PYTHON": str(PYTHON)}
    session_conf = _pairs(args.conf)
    variant_conf = [*args.conf, *args.also_with]
    suffix = " + " + ", ".join(
        f"{k.rsplit('.', 1)[-1]}={v}" for k, v in _pairs(args.also_with).items()
    )
    bare = spark_code(session_conf, delta_write=False)
    delta = spark_code(session_conf, delta_write=True)
    times: dict[str, list[float]] = {}

    def note(label: str, seconds: float) -> None:
        times.setdefault(label, []).append(seconds)

    with scratch_dir("hw-bench-tiny-", keep=args.keep) as scratch:
        for number in range(1, args.repeat + 1):
            folder = scratch / f"run-{number}"
            folder.mkdir()
            run_env = {**env, "HEADWATER_HOME": str(folder / ".headwater")}
            note(BASELINE, timed([str(PYTHON), "-c", bare], folder, run_env)[0])
            note(
                "reference: import only (no Spark)",
                timed([str(PYTHON), "-c", IMPORTS], folder, run_env)[0],
            )
            note(
                "reference: bare Spark + one 100-row Delta write",
                timed([str(PYTHON), "-c", delta], folder, run_env)[0],
            )
            runs = [("", args.conf)] + ([(suffix, variant_conf)] if args.also_with else [])
            for label_suffix, conf in runs:
                place = folder / f"sync{len(label_suffix)}"
                place.mkdir()
                connection = write_connection(place, args.users)
                for kind in ("first (new tables)", "repeat (tables exist)"):
                    seconds = headwater_sync(connection, place, run_env, args.users, conf)
                    note(f"headwater sync, {kind}{label_suffix}", seconds)
            print(
                f"  repetition {number}: "
                + ", ".join(f"{values[-1]:.2f}" for values in times.values())
                + f" s   ({load_line()})",
                flush=True,
            )

    base_min, base_median = min(times[BASELINE]), median(times[BASELINE])
    rows = [
        [
            name,
            len(values),
            f"{min(values):.2f}",
            f"{median(values):.2f}",
            f"{min(values) / base_min:.2f}x",
            f"{median(values) / base_median:.2f}x",
            f"{median(values) - base_median:+.2f}",
        ]
        for name, values in times.items()
    ]
    columns = [
        "process",
        "n",
        "min s",
        "median s",
        "min vs baseline",
        "median vs baseline",
        "median - baseline s",
    ]
    print()
    print(table(columns, rows))
    print(f"\nend:     {load_line()}")


if __name__ == "__main__":
    main()
