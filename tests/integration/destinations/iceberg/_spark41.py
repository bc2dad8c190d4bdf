"""Spark 4.1 with Iceberg's Spark runtime, run as a separate process: Java's reading of
the tables Headwater writes.

No Iceberg runtime loads on the project's Spark 4.2 (docs/destinations/iceberg.md), so
the tests that read with Spark run Spark 4.1.4 and ``iceberg-spark-runtime-4.1_2.13``
1.12.0 from a venv of their own, made by ``bench/setup-alternatives spark41-iceberg``
(``scripts/setup-tests`` runs it; ``HEADWATER_SPARK41_PYTHON`` may name another
interpreter).  Missing, the tests fail saying so, as for the suite's other servers:
a skip would let CI pass without Spark ever reading a table.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[4]
SPARK41_PYTHON = Path(os.environ.get("HEADWATER_SPARK41_PYTHON")
                      or REPO / ".bench-venvs" / "spark41-iceberg" / "bin" / "python")
JARS = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "headwater" / "bench-jars"
RUNTIME_JAR = JARS / "iceberg-spark-runtime-4.1_2.13-1.12.0.jar"
SCRIPTS = Path(__file__).parent / "spark41"


def require_spark41() -> None:
    """Fail the test, saying how to set it up, when Spark 4.1 + Iceberg is missing."""
    if not SPARK41_PYTHON.is_file() or not RUNTIME_JAR.is_file():
        pytest.fail(f"Spark 4.1 + Iceberg is not set up ({SPARK41_PYTHON}, {RUNTIME_JAR}): "
                    "run scripts/setup-tests (or bench/setup-alternatives spark41-iceberg)")


def jdbc_driver(artifact: str) -> str:
    """The JDBC driver jar ``bench/setup-alternatives spark41-iceberg`` fetched (``sqlite-jdbc``,
    ``postgresql``), for Spark's ``JdbcCatalog``."""
    found = sorted(JARS.glob(f"{artifact}-[0-9]*.jar"))
    if not found:
        pytest.fail(f"no {artifact} JDBC driver in {JARS}: run scripts/setup-tests")
    return str(found[-1])


def _environment(tmp_path: Path) -> dict[str, str]:
    """This process's environment without the project's Spark settings, for Spark 4.1."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("SPARK_HOME", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "PYTHONPATH")}
    env.update({"PYSPARK_PYTHON": str(SPARK41_PYTHON),
                "PYSPARK_DRIVER_PYTHON": str(SPARK41_PYTHON),
                "SPARK_LOCAL_DIRS": str(tmp_path / "spark41-local")})
    return env


def _answer(returncode: int, stdout: str, stderr: str) -> dict[str, Any]:
    """The script's last stdout line as JSON, once it succeeded on Spark 4.1."""
    assert returncode == 0, stderr[-4000:]
    found: dict[str, Any] = json.loads(stdout.strip().splitlines()[-1])
    assert found["spark"].startswith("4.1."), found["spark"]
    return found


def run_spark41(script: str, args: list[str], tmp_path: Path) -> tuple[dict[str, Any], str]:
    """Run ``spark41/<script>`` in the Spark 4.1 venv; its last stdout line as JSON, and
    its stderr.  The project's Spark settings are kept out of its environment."""
    require_spark41()
    done = subprocess.run([str(SPARK41_PYTHON), str(SCRIPTS / script), *args],
                          env=_environment(tmp_path), cwd=tmp_path, capture_output=True,
                          text=True, check=False)
    return _answer(done.returncode, done.stdout, done.stderr), done.stderr


@dataclass(frozen=True)
class SparkRead:
    """Tables to read through one Iceberg catalog: its properties and its name in Spark."""

    catalog: dict[str, str]
    tables: list[str]
    name: str = "ice"
    #: Jars the catalog needs on the class path (a JDBC driver).
    jars: tuple[str, ...] = ()


class EarlySparkReader:
    """A Spark 4.1 process started before the tables it will read exist.

    Why: its JVM and session start cost 10-20 s here, and the test's syncs, which
    make the tables, take longer than that; started first, the process is ready
    when they end.  ``read_tables.py`` starts its session with ``jars`` on its
    class path, then waits for the reads on its standard input (:meth:`read`).
    """

    def __init__(self, jars: Sequence[str], tmp_path: Path) -> None:
        require_spark41()
        request = {"jar": str(RUNTIME_JAR), "jars": list(dict.fromkeys(jars))}
        self._process = subprocess.Popen(
            [str(SPARK41_PYTHON), str(SCRIPTS / "read_tables.py"), json.dumps(request)],
            env=_environment(tmp_path), cwd=tmp_path, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def read(self, reads: list[SparkRead]) -> list[dict[str, dict[str, Any]]]:
        """Each read's tables as Spark 4.1's Iceberg catalog reads them (``read_tables.py``:
        its docstring says how values are printed); a list in the order of ``reads``, each
        table name -> its columns and rows.  Every read's jars must have been given."""
        line = json.dumps([{"catalog": r.catalog, "tables": r.tables, "name": r.name}
                           for r in reads])
        stdout, stderr = self._process.communicate(line + "\n")
        found = _answer(self._process.returncode, stdout, stderr)
        return [read["tables"] for read in found["reads"]]

    def close(self) -> None:
        """Stop the process if :meth:`read` was never reached (a sync failed first)."""
        if self._process.poll() is None:
            self._process.kill()
            self._process.communicate()

    def __enter__(self) -> EarlySparkReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
