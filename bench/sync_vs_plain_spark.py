"""Throughput of a Headwater sync against a plain Spark job writing the same rows to Delta.

Both sides run in one Spark session, in this process, on the same data:

* **plain Spark** (the baseline): ``spark.range(P, numPartitions=P).mapInArrow(fn)``
  where ``fn`` calls the sample ``users`` stream's own ``read(partition)`` for the
  same P partitions Headwater plans, then
  ``df.write.format("delta").mode("overwrite").save(path)``: same data generation
  cost, no metadata columns, one job, one commit.
* **Headwater**: ``SyncEngine.run()`` on a connection file (``users`` only,
  full_refresh + overwrite, a temp SQLite metadata store, a temp Delta folder),
  once per checkpoint-size variant (``checkpoint: {partitions_per_checkpoint: N}``).

The session is warmed up first (one small job of each kind), so neither side pays
for the JVM or the Python workers starting.  Every run writes a new folder, and its
row count is checked against the Delta table afterwards (outside the timed part).
Figures: rows per second and the ratio Headwater / plain (aim: >= 0.5).

``--also-with KEY=VALUE`` measures every Headwater variant a second time with that
Spark SQL conf set during the sync only: a way to try a fix without editing code.

Run: ``.venv/bin/python bench/sync_vs_plain_spark.py [--rows 5000000]``
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from _common import dir_size, header, load_line, scratch_dir, stream_frame, table

from headwater.config import load_connection
from headwater.connectors.sample import SampleSource, SampleStream
from headwater.destinations._base import CommitResult
from headwater.engine import (
    RunPlan,
    SparkSettings,
    SyncEngine,
    SyncObserver,
    SyncOptions,
    get_spark,
)
from headwater.metadata_store import MetadataStore
from headwater.table_schema import arrow_schema_for

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

PLAIN = "plain Spark"


@dataclass(frozen=True)
class Variant:
    """One Headwater configuration: checkpoint size, lanes, SQL confs set during the sync."""

    label: str
    per_checkpoint: int | None = None  # None: the engine's default
    lanes: int | None = None  # None: the connection default (concurrent_checkpoints)
    conf: tuple[tuple[str, str], ...] = ()


@dataclass
class Measurement:
    label: str
    seconds: list[float] = field(default_factory=list)
    checkpoints: int = 0
    per_checkpoint: int = 0
    table_bytes: int = 0
    setup_s: list[float] = field(default_factory=list)
    finish_s: list[float] = field(default_factory=list)
    checkpoint_s: list[float] = field(default_factory=list)


@dataclass(frozen=True)
class SyncTiming:
    seconds: float
    setup_s: float
    finish_s: float
    checkpoints: int
    per_checkpoint: int
    checkpoint_s: list[float]
    rows: int


class _Timeline(SyncObserver):
    """Notes when the run starts reading and when each checkpoint commits."""

    def __init__(self) -> None:
        self.started: float | None = None
        self.commits: list[float] = []

    def run_started(self, run_id: str, plan: RunPlan, resumed: bool) -> None:
        self.started = time.perf_counter()

    def checkpoint_committed(self, stream: str, partitions: int, result: CommitResult) -> None:
        self.commits.append(time.perf_counter())


def source_config(rows: int, rows_per_partition: int) -> dict[str, Any]:
    return {"seed": 42, "users": rows, "orders": 0, "rows_per_partition": rows_per_partition}


def users_stream(rows: int, rows_per_partition: int) -> SampleStream:
    return SampleSource(source_config(rows, rows_per_partition)).stream("users")


# --------------------------------------------------------------------- plain Spark


def plain_spark(spark: SparkSession, rows: int, rows_per_partition: int, path: Path) -> float:
    """The baseline: the stream's own reader under mapInArrow, one Delta overwrite."""
    began = time.perf_counter()
    frame = stream_frame(spark, users_stream(rows, rows_per_partition))
    frame.write.format("delta").mode("overwrite").save(str(path))
    return time.perf_counter() - began


# --------------------------------------------------------------------- Headwater


def write_connection(folder: Path, rows: int, rows_per_partition: int, variant: Variant) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    checkpoint: dict[str, int] = {}
    if variant.per_checkpoint is not None:
        checkpoint["partitions_per_checkpoint"] = variant.per_checkpoint
    if variant.lanes is not None:
        checkpoint["concurrent_checkpoints"] = variant.lanes
    document: dict[str, Any] = {
        "name": "bench",
        "source": {"type": "sample", "config": source_config(rows, rows_per_partition)},
        "destination": {"type": "delta", "config": {"path": str(folder / "lake")}},
        "streams": [
            {"name": "users", "sync_mode": "full_refresh", "destination_sync_mode": "overwrite"}
        ],
        "metadata_store": f"sqlite:///{folder / 'headwater.db'}",
    }
    if checkpoint:
        document["checkpoint"] = checkpoint
    path = folder / "bench.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def headwater_sync(
    spark: SparkSession,
    folder: Path,
    rows: int,
    rows_per_partition: int,
    variant: Variant,
    settings: SparkSettings,
) -> SyncTiming:
    """One sync through the real engine, on the already running session."""
    connection = load_connection(write_connection(folder, rows, rows_per_partition, variant))
    store = MetadataStore(connection.metadata_store or "")
    timeline = _Timeline()
    for key, value in variant.conf:
        spark.conf.set(key, value)
    try:
        began = time.perf_counter()
        engine = SyncEngine(connection, store, SyncOptions(spark=settings), timeline)
        result = engine.run()
        ended = time.perf_counter()
        if result.status != "succeeded":
            raise SystemExit(f"Headwater sync failed: {result.to_dict()}")
        checkpoint_s = [
            float(c.stats.get("duration_s", 0.0))
            for c in store.list_checkpoints(result.run_id)
            if c.status == "released"
        ]
        run = store.get_run(result.run_id)
        planned = run.plan["streams"][0]["checkpoints"] if run else []
    finally:
        for key, _ in variant.conf:
            spark.conf.unset(key)
        store.close()
    stats = result.streams[0]
    return SyncTiming(
        seconds=ended - began,
        setup_s=(timeline.started or began) - began,
        finish_s=ended - max(timeline.commits, default=ended),
        checkpoints=stats.checkpoints,
        per_checkpoint=max((len(c["partitions"]) for c in planned), default=0),
        checkpoint_s=checkpoint_s,
        rows=stats.records_written,
    )


# --------------------------------------------------------------------- the run


def parse_variants(text: str, partitions: int, also_with: Sequence[str]) -> list[Variant]:
    """``default,1,4,16,all`` or ``8@1`` (8 partitions per checkpoint, 1 lane); each one
    twice (plain, then with the SQL confs) when ``also_with`` holds ``KEY=VALUE`` pairs."""
    conf = tuple(_pair(item) for item in also_with)
    variants = []
    for item in (part.strip() for part in text.split(",") if part.strip()):
        size, _, lanes = item.partition("@")
        per_checkpoint = {"default": None, "all": partitions}.get(size)
        if size not in ("default", "all"):
            per_checkpoint = int(size)
        variant = Variant(item, per_checkpoint, int(lanes) if lanes else None)
        variants.append(variant)
        if conf:
            suffix = " + " + ", ".join(f"{k.rsplit('.', 1)[-1]}={v}" for k, v in conf)
            variants.append(Variant(item + suffix, variant.per_checkpoint, variant.lanes, conf))
    return variants


def _pair(item: str) -> tuple[str, str]:
    key, sep, value = item.partition("=")
    if not sep:
        raise SystemExit(f"expected KEY=VALUE, got {item!r}")
    return key.strip(), value.strip()


def measure(
    label: str,
    results: dict[str, Measurement],
    run: Callable[[Path], SyncTiming | float],
    spark: SparkSession,
    folder: Path,
    expected: int,
) -> None:
    """Run once into a new folder, check the row count, keep the figures, free the disk."""
    outcome = run(folder)
    table_path = folder / "lake" / "users"
    got = int(spark.read.format("delta").load(str(table_path)).count())
    if got != expected:
        raise SystemExit(f"{label}: the Delta table holds {got} rows, expected {expected}")
    entry = results.setdefault(label, Measurement(label))
    entry.table_bytes = dir_size(table_path)
    if isinstance(outcome, SyncTiming):
        if outcome.rows != expected:
            raise SystemExit(f"{label}: Headwater reported {outcome.rows} rows written")
        entry.seconds.append(outcome.seconds)
        entry.setup_s.append(outcome.setup_s)
        entry.finish_s.append(outcome.finish_s)
        entry.checkpoints = outcome.checkpoints
        entry.per_checkpoint = outcome.per_checkpoint
        entry.checkpoint_s += outcome.checkpoint_s
    else:
        entry.seconds.append(outcome)
    print(f"  {label:<48} {entry.seconds[-1]:7.2f} s   ({load_line()})", flush=True)
    shutil.rmtree(folder, ignore_errors=True)


def task_breakdown(rows: int, rows_per_partition: int) -> list[list[object]]:
    """Python only, one core, no Spark: the connector's read alone, then with Headwater's
    task on top (metadata columns + conforming to the table schema)."""
    from headwater.engine._task import TaskContext, read_partition

    stream = users_stream(rows, rows_per_partition)
    partitions = stream.partitions(None)
    context = TaskContext(
        run_id="bench", checkpoint_index=1, data_schema=arrow_schema_for(stream.json_schema())
    )
    readers: list[tuple[str, Callable[[Any], Iterator[pa.RecordBatch]]]] = [
        ("connector read() only", stream.read),
        ("read() + Headwater task", lambda p: read_partition(stream, p, context)),
    ]
    figures: list[list[object]] = []
    for label, reader in readers:
        began = time.perf_counter()
        seen = sum(batch.num_rows for p in partitions for batch in reader(p))
        seconds = time.perf_counter() - began
        if seen != rows:
            raise SystemExit(f"{label}: read {seen} rows, expected {rows}")
        figures.append([label, f"{seconds:.2f}", f"{rows / seconds:,.0f}"])
    return figures


def summary(results: dict[str, Measurement], rows: int) -> str:
    base = min(results[PLAIN].seconds)
    lines: list[list[object]] = []
    for entry in results.values():
        best = min(entry.seconds)
        ckpt = sorted(entry.checkpoint_s)
        lines.append(
            [
                entry.label,
                len(entry.seconds),
                f"{best:.2f}",
                f"{rows / best:,.0f}",
                f"{base / best:.2f}x",
                entry.per_checkpoint or "",
                entry.checkpoints or "",
                f"{ckpt[len(ckpt) // 2]:.2f}" if ckpt else "",
                f"{min(entry.setup_s):.2f}" if entry.setup_s else "",
                f"{min(entry.finish_s):.2f}" if entry.finish_s else "",
                f"{entry.table_bytes / 1e6:.0f}",
            ]
        )
    columns = [
        "run",
        "n",
        "best s",
        "rows/s",
        "vs plain",
        "partitions/ckpt",
        "ckpts",
        "median ckpt s",
        "setup s",
        "finish s",
        "table MB",
    ]
    return table(columns, lines)


LEGEND = """\
vs plain = plain Spark's best time / this run's best time (1.00x = as fast).
ckpt s = one checkpoint's read + write + commit, as the engine records it.
setup = engine start to run_started (session, lock, plan, persisted run);
finish = last commit to the end (final state, run record)."""


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description="Rows/s of a Headwater sync (sample users -> Delta, full_refresh + "
        "overwrite) against a plain Spark mapInArrow job writing the same rows to Delta, "
        "in one warmed-up session.",
    )
    parser.add_argument("--rows", type=int, default=5_000_000, help="users rows (default 5M)")
    parser.add_argument(
        "--rows-per-partition",
        type=int,
        default=100_000,
        help="the sample source's rows_per_partition (default: its own, 100000)",
    )
    parser.add_argument(
        "--variants",
        default="default,1,4,16,all",
        help="partitions_per_checkpoint values, comma-separated: an integer, "
        "'default' (the engine chooses), 'all' (one checkpoint); 'N@L' also "
        "sets concurrent_checkpoints=L (default: %(default)s)",
    )
    parser.add_argument(
        "--also-with",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="measure every variant again with this Spark SQL conf set during "
        "the sync (repeatable; all pairs together)",
    )
    parser.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="extra Spark conf for the session, both sides (repeatable)",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="measure everything this many times and keep the best "
        "(the baseline also runs once more at the end)",
    )
    parser.add_argument("--master", default="local[*]", help="Spark master (default local[*])")
    parser.add_argument(
        "--breakdown",
        action="store_true",
        help="also time the Python side of a task alone (no Spark, one core)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temp folder")
    args = parser.parse_args(argv)

    logging.basicConfig(level=logging.WARNING)
    header("Headwater sync vs plain Spark -> Delta", [Path(sys.executable).name, *sys.argv])
    partitions = len(users_stream(args.rows, args.rows_per_partition).partitions(None))
    variants = parse_variants(args.variants, partitions, args.also_with)
    print(
        f"{args.rows:,} rows of sample users in {partitions} partitions of "
        f"<= {args.rows_per_partition:,} rows\n"
    )

    with scratch_dir("hw-bench-sync-", keep=args.keep) as scratch:
        settings = SparkSettings(
            master=args.master,
            app_name="headwater-bench",
            conf=dict(_pair(c) for c in args.conf),
            jvm_log_path=scratch / "spark.log",
        )
        spark = get_spark(settings)
        print(
            f"Spark {spark.version}, master {args.master}, default parallelism "
            f"{spark.sparkContext.defaultParallelism}"
        )

        print("warm-up (one small job of each kind)", flush=True)
        plain_spark(spark, 20_000, 10_000, scratch / "warm-plain")
        headwater_sync(spark, scratch / "warm-hw", 20_000, 10_000, Variant("warm"), settings)

        results: dict[str, Measurement] = {}
        folders = (scratch / f"run-{number}" for number in range(1, 10_000))

        def plain(path: Path) -> float:
            return plain_spark(spark, args.rows, args.rows_per_partition, path / "lake" / "users")

        def sync_with(variant: Variant) -> Callable[[Path], SyncTiming]:
            return lambda path: headwater_sync(
                spark, path, args.rows, args.rows_per_partition, variant, settings
            )

        print("measuring", flush=True)
        for _ in range(args.repeat):
            measure(PLAIN, results, plain, spark, next(folders), args.rows)
            for variant in variants:
                label = f"headwater {variant.label}"
                measure(label, results, sync_with(variant), spark, next(folders), args.rows)
        measure(PLAIN, results, plain, spark, next(folders), args.rows)

        print()
        print(summary(results, args.rows))
        print()
        print(LEGEND)
        if args.breakdown:
            print("\nPython side of the tasks alone (no Spark, one core):")
            breakdown = task_breakdown(args.rows, args.rows_per_partition)
            print(table(["what", "s", "rows/s"], breakdown))
        print(f"\nend:     {load_line()}")
        spark.stop()


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    main()
