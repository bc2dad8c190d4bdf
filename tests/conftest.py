"""Fixtures shared by the whole suite: one Spark session per test run, not per test."""

from __future__ import annotations

import contextlib
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

#: The JVMs tests start for one command (CLI syncs, spark-submit, Spark 4.1 readers, a
#: cluster's master, workers and executors) compile with C1 only.  Why: they live
#: seconds to a minute on tiny data, where HotSpot's C2 compiler spends CPU on code
#: that never pays it back, CPU the other pytest process needs.  Measured on the 2-core
#: machine (a 6,000-row CLI sync, two interleaved runs each, CPU of every process from
#: /proc): 23.4 and 27.8 CPU-seconds against 29.2 and 32.2.  The test process's own JVM
#: lives the whole run and keeps the default: C1 only made two in-process test files
#: 187 s against 149 and 167.  Semantics do not depend on the JIT.
SHORT_LIVED_JVM = "-XX:TieredStopAtLevel=1"
#: How the option reaches each of them without a word on their stderr (JAVA_TOOL_OPTIONS
#: would print one): spark-submit's JVMs, the cluster's daemons, and the executors
#: (``spark.executor.extraJavaOptions`` in ``tests/spark-conf/spark-defaults.conf``).
os.environ.setdefault("SPARK_SUBMIT_OPTS", SHORT_LIVED_JVM)
os.environ.setdefault("SPARK_DAEMON_JAVA_OPTS", SHORT_LIVED_JVM)
os.environ.setdefault("SPARK_CONF_DIR", str(Path(__file__).with_name("spark-conf")))


@contextlib.contextmanager
def _long_lived_jvm() -> Iterator[None]:
    """The JVM started inside the block gets HotSpot's default compilers."""
    ours = os.environ.get("SPARK_SUBMIT_OPTS") == SHORT_LIVED_JVM
    if ours:
        del os.environ["SPARK_SUBMIT_OPTS"]
    try:
        yield
    finally:
        if ours:
            os.environ["SPARK_SUBMIT_OPTS"] = SHORT_LIVED_JVM


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
    workers.check_shared(items)
    workers.mark_slow(items)


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """The one local Spark session (with Delta Lake) every integration test shares."""
    from headwater.engine import SparkSettings, get_spark

    logs = tmp_path_factory.mktemp("spark-logs")
    with _long_lived_jvm():
        session = get_spark(SparkSettings(master="local[2]", app_name="headwater-tests",
                                          conf={"spark.sql.shuffle.partitions": "4",
                                                # Each pytest process its own (xdist workers).
                                                "spark.sql.warehouse.dir":
                                                    str(tmp_path_factory.mktemp("warehouse"))},
                                          jvm_log_path=Path(logs) / "spark.log"))
    yield session
    session.stop()


@pytest.fixture(autouse=True)
def _spark_session_first(request: pytest.FixtureRequest) -> None:
    """A test marked ``spark`` starts the shared session before its code runs.

    A sync run in the test process (``_in_process``, ``_connections.sync``) takes the
    active session, or starts one with only its own destination's needs: a test that
    syncs without asking for ``spark`` would leave a session without Delta's extension
    for every later test of its pytest process (the ``spark`` fixture then refuses it).
    """
    if request.node.get_closest_marker("spark") is not None:
        request.getfixturevalue("spark")


@pytest.fixture(scope="session")
def postgres_server(request: pytest.FixtureRequest) -> Iterator[object]:
    """A real PostgreSQL on 127.0.0.1 (``scripts/postgres``); stopped if this session started it."""
    from tests import _postgres

    server, started = _postgres.start()
    yield server
    # Under xdist the other worker may still use it: the controller stops it (_workers).
    if started and not workers.is_worker(request.config):
        _postgres.stop()


@pytest.fixture(scope="session")
def mariadb_server(request: pytest.FixtureRequest) -> Iterator[object]:
    """A real MariaDB on 127.0.0.1 (``scripts/mariadb``, binary log on for change data
    capture); stopped if this session started it."""
    from tests import _mariadb

    server, started = _mariadb.start()
    yield server
    # Under xdist the other worker may still use it: the controller stops it (_workers).
    if started and not workers.is_worker(request.config):
        _mariadb.stop()


@pytest.fixture(scope="session")
def kafka_broker(request: pytest.FixtureRequest) -> Iterator[object]:
    """A real Apache Kafka broker on 127.0.0.1 (``scripts/kafka``: one KRaft node);
    stopped if this session started it."""
    from tests import _kafka

    broker, started = _kafka.start()
    yield broker
    if started and not workers.is_worker(request.config):
        _kafka.stop()
