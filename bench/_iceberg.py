"""What the two Iceberg benchmarks share: three writers of the same rows, each a new process.

Why subprocesses: Headwater's PySpark 4.2 cannot write Iceberg through Spark at
all (no ``iceberg-spark-runtime`` loads on Spark 4.2), so "a plain Spark job
writing the same rows to Iceberg" runs on Spark 4.1.4 with
``iceberg-spark-runtime-4.1_2.13:1.12.0``, in the venv ``bench/setup-alternatives
spark41-iceberg`` makes.  To compare like with like every writer is timed as a
whole command, JVM (or Python) start included:

* **headwater**: ``python -m headwater.cli.app sync FILE --json`` (Iceberg, the
  embedded SQLite catalog, a new warehouse each time);
* **plain Spark 4.1 + Iceberg** (the baseline the ratios are against):
  ``bench/_spark41_iceberg.py`` in the Spark 4.1 venv, Iceberg's Hadoop catalog;
* **PyIceberg** (a second reference): ``bench/_pyiceberg_write.py``, one
  process reading every row into one Arrow table, then ``table.append(arrow)``.

After each run, outside the timed part, the table is read back with PyIceberg
(its ``id`` column) and must hold exactly the expected rows, each id once.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import REPO, load_line, median, table

#: The venv and jar ``bench/setup-alternatives spark41-iceberg`` makes.
SPARK41_VENV = REPO / ".bench-venvs" / "spark41-iceberg"
ICEBERG_RUNTIME_JAR = (Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
                       / "headwater" / "bench-jars" / "iceberg-spark-runtime-4.1_2.13-1.12.0.jar")
HEADWATER = "headwater"
SPARK41 = "plain Spark 4.1 + Iceberg"
PYICEBERG = "PyIceberg append"
#: The catalog name Headwater's embedded SQL catalog uses (readers must use the same).
CATALOG_NAME = "headwater"


@dataclass
class Figures:
    """One writer's runs: wall seconds of each whole command, rows read back."""

    label: str
    seconds: list[float] = field(default_factory=list)
    inner_s: list[float] = field(default_factory=list)
    rows: int = 0


def require_spark41() -> Path:
    """The Spark 4.1 venv's Python; exit with the set-up command when it is missing."""
    python = SPARK41_VENV / "bin" / "python"
    if not python.is_file() or not ICEBERG_RUNTIME_JAR.is_file():
        raise SystemExit("the Spark 4.1 + Iceberg baseline is not set up: run "
                         "bench/setup-alternatives spark41-iceberg")
    return python


def headwater_env(home: Path) -> dict[str, str]:
    """The environment of a Headwater CLI process: this clone's code, its own home."""
    return {**os.environ, "HEADWATER_HOME": str(home),
            "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO),
                                                        os.environ.get("PYTHONPATH")]))}


def spark41_env() -> dict[str, str]:
    """The Spark 4.1 venv's environment, able to import this clone's ``sample`` source.

    The sample source's generator (the same code Headwater's tasks run) needs
    Headwater's own dependencies, which the Spark 4.1 venv lacks: the project
    venv's site-packages are put on the path *after* the 4.1 venv's, so PySpark
    4.1.4 is the one imported, on the driver and in the Python workers alike.
    """
    python = require_spark41()
    own = subprocess.run([str(python), "-c", "import sysconfig; "
                          "print(sysconfig.get_paths()['purelib'])"],
                         check=True, capture_output=True, text=True).stdout.strip()
    project = sysconfig.get_paths()["purelib"]
    env = {key: value for key, value in os.environ.items()
           if key not in ("SPARK_HOME", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")}
    env.update({"PYSPARK_PYTHON": str(python), "PYSPARK_DRIVER_PYTHON": str(python),
                "PYTHONPATH": os.pathsep.join([str(REPO), own, project])})
    return env


def run_timed(command: Sequence[str], env: Mapping[str, str], log: Path) -> tuple[float, str]:
    """Wall seconds of ``command`` (a new process) and its stdout; its stderr goes to ``log``."""
    with log.open("a") as err:
        began = time.perf_counter()
        done = subprocess.run(list(command), env=dict(env), stdout=subprocess.PIPE,
                              stderr=err, text=True, check=False)
        seconds = time.perf_counter() - began
    if done.returncode != 0:
        tail = log.read_text(errors="replace")[-3000:]
        raise SystemExit(f"{command[0]} ... exited with {done.returncode}:\n{tail}")
    return seconds, done.stdout


def last_json(stdout: str) -> dict[str, Any]:
    """The JSON object the child printed: its whole stdout (``--json``), else its last line."""
    candidates = [stdout, *reversed(stdout.strip().splitlines())]
    for text in candidates:
        try:
            document = json.loads(text)
        except ValueError:
            continue
        if isinstance(document, dict):
            return document
    raise SystemExit(f"no JSON document in the output:\n{stdout[-2000:]}")


def sql_catalog_ids(warehouse: Path, identifier: str) -> list[int]:
    """The ``id`` column of a table in a SQLite catalog ``warehouse/catalog.db``."""
    from pyiceberg.catalog import load_catalog

    catalog = load_catalog(CATALOG_NAME, type="sql", uri=f"sqlite:///{warehouse}/catalog.db",
                           warehouse=f"file://{warehouse}")
    ids = catalog.load_table(identifier).scan(selected_fields=("id",)).to_arrow()
    values: list[int] = ids.column("id").to_pylist()
    return values


def hadoop_table_ids(table_folder: Path) -> list[int]:
    """The ``id`` column of a Hadoop-catalog table (its newest ``vN.metadata.json``)."""
    from pyiceberg.table import StaticTable

    metadata = max((table_folder / "metadata").glob("v*.metadata.json"),
                   key=lambda p: int(p.name[1:].split(".", 1)[0]))
    ids = StaticTable.from_metadata(f"file://{metadata}").scan(
        selected_fields=("id",)).to_arrow()
    values: list[int] = ids.column("id").to_pylist()
    return values


def check_rows(label: str, ids: list[int], expected: int) -> int:
    """``ids`` must be ``expected`` distinct values: every row once."""
    if len(ids) != expected or len(set(ids)) != expected:
        raise SystemExit(f"{label}: read back {len(ids):,} rows ({len(set(ids)):,} ids), "
                         f"expected {expected:,}, each once")
    return len(ids)


#: A writer's run into a new folder: (wall seconds, its own inner seconds, ids read back).
Run = Callable[[Path, Path], tuple[float, float, list[int]]]


def headwater_run(connection: Callable[[Path], Path], table_name: str) -> Run:
    """``headwater sync FILE --json`` of the connection ``connection(folder)`` writes."""
    def run(folder: Path, log: Path) -> tuple[float, float, list[int]]:
        path = connection(folder)
        seconds, out = run_timed(
            [sys.executable, "-m", "headwater.cli.app", "sync", str(path), "--json"],
            headwater_env(folder / ".headwater"), log)
        document = last_json(out)
        if document.get("status") != "succeeded":
            raise SystemExit(f"the sync did not succeed: {document}")
        inner = float(document.get("duration_s") or 0.0)
        return seconds, inner, sql_catalog_ids(folder / "warehouse", f"headwater.{table_name}")
    return run


def spark41_run(what: str, table_name: str, options: Sequence[str]) -> Run:
    """``bench/_spark41_iceberg.py WHAT OPTIONS`` in the Spark 4.1 venv."""
    env = spark41_env()

    def run(folder: Path, log: Path) -> tuple[float, float, list[int]]:
        seconds, out = run_timed(
            [env["PYSPARK_PYTHON"], str(REPO / "bench" / "_spark41_iceberg.py"), what,
             "--jar", str(ICEBERG_RUNTIME_JAR), "--warehouse", str(folder / "warehouse"),
             "--table", table_name, *options], env, log)
        inner = float(last_json(out)["write_s"])
        return seconds, inner, hadoop_table_ids(folder / "warehouse" / "bench" / table_name)
    return run


def pyiceberg_run(what: str, table_name: str, options: Sequence[str]) -> Run:
    """``bench/_pyiceberg_write.py WHAT OPTIONS`` in this venv."""
    def run(folder: Path, log: Path) -> tuple[float, float, list[int]]:
        seconds, out = run_timed(
            [sys.executable, str(REPO / "bench" / "_pyiceberg_write.py"), what,
             "--warehouse", str(folder / "warehouse"), "--table", table_name, *options],
            headwater_env(folder / ".headwater"), log)
        document = last_json(out)
        inner = float(document["read_s"]) + float(document["append_s"])
        return seconds, inner, sql_catalog_ids(folder / "warehouse", f"bench.{table_name}")
    return run


def measure(runs: Mapping[str, Run], repeat: int, scratch: Path, rows: int) -> list[Figures]:
    """Each writer once per round, ``repeat`` rounds, each run into a new folder, rows checked."""
    results = [Figures(label) for label in runs]
    log = scratch / "children.log"
    for number in range(1, repeat + 1):
        print(f"round {number} of {repeat}", flush=True)
        for figures in results:
            folder = fresh(scratch / "run")
            seconds, inner, ids = runs[figures.label](folder, log)
            figures.seconds.append(seconds)
            figures.inner_s.append(inner)
            figures.rows = check_rows(figures.label, ids, rows)
            del ids
            note(figures)
    shutil.rmtree(scratch / "run", ignore_errors=True)
    return results


def add_options(parser: argparse.ArgumentParser) -> None:
    """The options both Iceberg benchmarks take."""
    parser.add_argument("--repeat", type=int, default=3, help="runs of each writer (medians)")
    parser.add_argument("--master", default="local[*]", help="Spark master, both Spark sides")
    parser.add_argument("--no-pyiceberg", action="store_true",
                        help="leave PyIceberg's writer out")
    parser.add_argument("--keep", action="store_true", help="keep the temp folder")


def writers(args: argparse.Namespace, headwater: Run, spark41: Run, pyiceberg: Run
            ) -> dict[str, Run]:
    """The writers to measure, by label, in the order they run in each round."""
    runs = {HEADWATER: headwater, SPARK41: spark41}
    if not args.no_pyiceberg:
        runs[PYICEBERG] = pyiceberg
    return runs


def report(results: Sequence[Figures], rows: int, caveat: str) -> None:
    """The summary table, its legend, ``caveat`` and the load at the end."""
    print()
    print(summary(results, rows))
    print()
    print(LEGEND)
    print(caveat)
    print(f"\nend:     {load_line()}")


def note(figures: Figures) -> None:
    inner = f", inner {figures.inner_s[-1]:.2f} s" if figures.inner_s else ""
    print(f"  {figures.label:<28} {figures.seconds[-1]:7.2f} s{inner}   ({load_line()})",
          flush=True)


def fresh(folder: Path) -> Path:
    """``folder``, emptied."""
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return folder


def summary(results: Sequence[Figures], rows: int, baseline: str = SPARK41) -> str:
    """Medians per writer, with the ratio against ``baseline`` (above 1: faster than it)."""
    base = median(next(f for f in results if f.label == baseline).seconds)
    lines: list[list[object]] = []
    for figures in results:
        wall = median(figures.seconds)
        lines.append([figures.label, len(figures.seconds), f"{wall:.2f}",
                      f"{min(figures.seconds):.2f}", f"{max(figures.seconds):.2f}",
                      f"{median(figures.inner_s):.2f}" if figures.inner_s else "",
                      f"{rows / wall:,.0f}", f"{base / wall:.2f}x", f"{figures.rows:,}"])
    return table(["writer", "n", "median s", "min s", "max s", "inner s", "rows/s",
                  f"vs {baseline}", "rows read back"], lines)


LEGEND = """\
s = wall time of the whole command (a new process: Python, JVM start, write, commit).
inner s = what the process itself timed: Headwater's duration_s from --json; the
  Spark 4.1 job's and PyIceberg's time after their session / imports were up.
vs = the baseline's median / this writer's median (above 1.00x: faster than it)."""
