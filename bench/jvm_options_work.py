"""Driver JVM options on a job where the JVM does the work: CPU-seconds and wall, side by side.

A faker or sample sync hardly works the JVM (the Python tasks write the files), so
an option that saves its JVM CPU could still slow Spark's own writer and readers.
This runs, in a fresh process per run (JVM options apply at the JVM's start), a
session from Headwater's own ``get_spark`` on ``local[*]`` with
``spark.driver.extraJavaOptions`` set to each variant's options, and in it a job
that is all JVM: ``spark.range(rows)`` with a string, a hash and a double column
written as Parquet, read back and aggregated, then the same rows written to Delta
by Spark's writer (the path a Headwater sync falls back to).  It reports the
job's wall seconds and the JVM's CPU-seconds (``/proc``, :mod:`bench._proc_cpu`),
medians and ranges; variants run interleaved so the machine's load falls on each
alike.  The default variant is what Headwater adds by itself today.

Usage::

    .venv/bin/python bench/jvm_options_work.py --rows 40000000 --repeat 3 \\
        --variant 'serial GC;-XX:+UseSerialGC' \\
        --variant 'no classpath extensions;;spark.sql.extensions.test.loadFromCp=false'
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import REPO, header, load_line, median, table
from bench._proc_cpu import TreeCpu


def child(rows: int, options: str | None, pairs: list[str], folder: Path) -> None:
    """The measured job, in this (child) process; prints its wall seconds as JSON."""
    from pyspark.sql import functions as F

    from headwater.engine import SparkSettings, get_spark

    conf = dict(pair.split("=", 1) for pair in pairs)
    if options is not None:
        conf["spark.driver.extraJavaOptions"] = options
    spark = get_spark(SparkSettings(master="local[*]", conf=conf,
                                    jvm_log_path=folder / "jvm.log"))
    started = time.monotonic()
    frame = (spark.range(rows, numPartitions=16)
             .withColumn("name", F.concat(F.lit("user-"), F.col("id").cast("string")))
             .withColumn("bucket", F.xxhash64("name") % 1000)
             .withColumn("score", F.rand(seed=1) * 100))
    frame.write.mode("overwrite").parquet(str(folder / "parquet"))
    back = spark.read.parquet(str(folder / "parquet"))
    groups = back.groupBy("bucket").agg(F.count("*").alias("n"), F.avg("score"),
                                        F.max("name")).collect()
    assert sum(row["n"] for row in groups) == rows
    back.write.format("delta").mode("overwrite").save(str(folder / "delta"))
    assert spark.read.format("delta").load(str(folder / "delta")).count() == rows
    print(json.dumps({"wall": time.monotonic() - started}))
    spark.stop()


def run_once(rows: int, options: str | None, pairs: list[str]) -> tuple[float, float]:
    """(job wall seconds, the JVM's CPU-seconds) of one fresh process."""
    with tempfile.TemporaryDirectory(prefix="hw-bench-jvm-") as folder:
        command = [sys.executable, __file__, "--child", "--rows", str(rows), "--folder", folder]
        if options is not None:
            command.append(f"--options={options}")
        command += [f"--conf={pair}" for pair in pairs]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True, env=env) as process:
            poller = TreeCpu(process.pid, root_kind="Python driver")
            out, err = process.communicate()
            poller.stop()
        if process.returncode != 0:
            raise SystemExit(f"the job failed ({process.returncode}):\n{err[-3000:]}")
        wall = json.loads(out.strip().splitlines()[-1])["wall"]
        return wall, poller.by_kind.get("Spark's JVM", 0.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=40_000_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--variant", action="append", default=[], metavar="LABEL;OPTIONS",
                        help="also run with these driver JVM options (repeatable); "
                             "``;KEY=VALUE`` after them adds Spark confs")
    parser.add_argument("--conf", action="append", default=[], help=argparse.SUPPRESS)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--options", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--folder", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.rows, args.options, args.conf, Path(args.folder))
        return
    header("Driver JVM options on a job where the JVM does the work", sys.argv)
    variants: list[tuple[str, str | None, list[str]]] = [("Headwater's defaults", None, [])]
    for variant in args.variant:
        label, options, *pairs = variant.split(";")
        variants.append((label, options or None, pairs))
    runs: dict[str, list[tuple[float, float]]] = {label: [] for label, *_ in variants}
    for _ in range(args.repeat):
        for label, options, pairs in variants:
            runs[label].append(run_once(args.rows, options, pairs))
    rows = []
    for label, done in runs.items():
        walls, cpus = [r[0] for r in done], [r[1] for r in done]
        rows.append([label, f"{median(walls):.1f}", f"{min(walls):.1f}..{max(walls):.1f}",
                     f"{median(cpus):.1f}", f"{min(cpus):.1f}..{max(cpus):.1f}", len(done)])
    print(table(["driver JVM options", "job wall s", "range", "JVM CPU s", "range", "runs"],
                rows))
    print(f"\nend:     {load_line()}")


if __name__ == "__main__":
    main()
