"""Fixtures shared by the whole suite: one Spark session per test run, not per test."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import _time_report as time_report
from tests import _workers as workers

# Spark's Python workers must run this interpreter (see DESIGN.md, field notes).
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


def pytest_configure(config: pytest.Config) -> None:
    # SIGTERM (a CI job's time limit, `timeout`) ends the run as Ctrl-C does, so pytest
    # still tears the session fixtures down and the servers they started (PostgreSQL,
    # the Spark Connect server, Redis) stop with it instead of outliving the run.
    signal.signal(signal.SIGTERM, _interrupted)
    # Where the minutes went, written at the end of every run (tests/_time_report.py).
    time_report.pytest_configure(config)
    workers.configure(config)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The slowest files first, for pytest-xdist's two processes (tests/_workers.py).
    workers.order_by_cost(items)
    workers.mark_slow(items)


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """The one local Spark session (with Delta Lake) every integration test shares."""
    from headwater.engine import SparkSettings, get_spark

    logs = tmp_path_factory.mktemp("spark-logs")
    session = get_spark(SparkSettings(master="local[2]", app_name="headwater-tests",
                                      conf={"spark.sql.shuffle.partitions": "4",
                                            # Each pytest process its own (xdist workers).
                                            "spark.sql.warehouse.dir":
                                                str(tmp_path_factory.mktemp("warehouse"))},
                                      jvm_log_path=Path(logs) / "spark.log"))
    yield session
    session.stop()


@pytest.fixture(scope="session")
def postgres_server(request: pytest.FixtureRequest) -> Iterator[object]:
    """A real PostgreSQL on 127.0.0.1 (``scripts/postgres``); stopped if this session started it."""
    from tests import _postgres

    server, started = _postgres.start()
    yield server
    # Under xdist the other worker may still use it: the controller stops it (_workers).
    if started and not workers.is_worker(request.config):
        _postgres.stop()
