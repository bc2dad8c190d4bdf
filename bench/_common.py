"""Helpers the benchmarks share: the machine they ran on, small tables, temp folders.

Benchmarks print their figures as ratios against a baseline measured in the same
run, so a figure stays comparable across machines; the machine line says where
the absolute numbers come from.
"""

from __future__ import annotations

import contextlib
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]


def machine_line() -> str:
    """Cores, CPU model, memory, Python and library versions, in one line."""
    model = platform.processor() or "?"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    memory = "?"
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                memory = f"{int(line.split()[1]) / 1024 / 1024:.0f} GiB"
                break
    versions = []
    for package in ("pyspark", "delta-spark", "pyarrow"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions.append(f"{package} {metadata.version(package)}")
    return (
        f"{os.cpu_count()} cores ({model}), {memory} RAM, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}, " + ", ".join(versions)
    )


def load_line() -> str:
    """The 1/5/15-minute load averages: a load above the core count means a shared machine."""
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "load average: unknown"
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def header(title: str, command: Sequence[str]) -> None:
    print(f"# {title}")
    print(f"date:    {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}")
    print(f"machine: {machine_line()}")
    print(f"command: {' '.join(command)}")
    print(f"start:   {load_line()}")
    print()


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """A plain-text table (also valid Markdown), numbers right-aligned."""
    cells = [[str(c) for c in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    numeric = [all(_is_number(row[i]) for row in cells[1:]) for i in range(len(headers))]

    def line(row: Sequence[str]) -> str:
        parts = [
            c.rjust(w) if num else c.ljust(w)
            for c, w, num in zip(row, widths, numeric, strict=True)
        ]
        return "| " + " | ".join(parts) + " |"

    rule = (
        "|"
        + "|".join(
            ("-" * (w + 1) + ":") if num else ("-" * (w + 2))
            for w, num in zip(widths, numeric, strict=True)
        )
        + "|"
    )
    return "\n".join([line(cells[0]), rule, *(line(row) for row in cells[1:])])


def _is_number(text: str) -> bool:
    try:
        float(text.replace(",", "").rstrip("x%s"))
    except ValueError:
        return False
    return True


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def dir_size(path: Path) -> int:
    """Bytes of every file under ``path`` (0 when it does not exist)."""
    if not path.exists():
        return 0
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def scratch_dir(prefix: str, keep: bool = False) -> Iterator[Path]:
    """A temp folder removed at the end (even after an error or SIGTERM) unless ``keep``."""
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield folder
    finally:
        if keep:
            print(f"kept {folder}", file=sys.stderr)
        else:
            shutil.rmtree(folder, ignore_errors=True)


def timed_headwater_sync(path: Path) -> tuple[float, Any]:
    """Seconds of one ``SyncEngine.run`` of the connection file ``path`` (in this
    process's Spark session), and its result; the run must succeed."""
    from headwater.config import load_connection
    from headwater.engine import SyncEngine, SyncObserver, SyncOptions
    from headwater.metadata_store import MetadataStore

    config = load_connection(path)
    engine = SyncEngine(config, MetadataStore(config.metadata_store or ""),
                        SyncOptions(), SyncObserver())
    began = time.perf_counter()
    result = engine.run()
    elapsed = time.perf_counter() - began
    assert result.status == "succeeded", result.to_dict()
    return elapsed, result


def run_with_postgres(main: Callable[[], None]) -> None:
    """Run ``main``; stop the project's PostgreSQL server afterwards if it was not
    running before (tests may share a running one)."""

    def postgres(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(REPO / "scripts" / "postgres"), command], check=False,
                              capture_output=True, text=True)

    was_running = postgres("status").returncode == 0
    try:
        main()
    finally:
        if not was_running:
            postgres("stop")


def stream_frame(spark: Any, stream: Any) -> Any:
    """A Spark DataFrame of ``stream``'s rows, read by its own ``read(partition)`` under
    ``mapInArrow``, one Spark partition per stream partition: the plain-Spark baselines'
    data, with the same generation cost as a sync's."""
    from pyspark.sql.pandas.types import from_arrow_schema

    from headwater.table_schema import arrow_schema_for

    partitions = stream.partitions(None)
    schema = from_arrow_schema(arrow_schema_for(stream.json_schema()))

    def read(positions: Iterator[Any]) -> Iterator[Any]:
        for batch in positions:
            for position in batch.column(0).to_pylist():
                yield from stream.read(partitions[position])

    count = len(partitions)
    return spark.range(count, numPartitions=count).mapInArrow(read, schema)
