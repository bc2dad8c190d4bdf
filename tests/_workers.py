"""Two pytest processes on CI's two cores (``pytest-xdist``), and what they must share.

Much of the suite waits: CLI processes starting a JVM, servers, HTTP latencies,
a task paused while it reads. ``scripts/test`` runs it under ``-n 2 --dist
loadfile --no-loadscope-reorder`` (docs/development.md), and this module makes that
safe and balanced:

- **A test file is one unit of work** (``loadfile``): its module-scoped fixtures (a
  module's crash cases run side by side by its first test, ``_side_by_side``; a
  catalog server per module) run once.  The files that run on the standalone cluster
  (the session's ``cluster`` fixture, three JVMs to start) are one unit together, so one
  process starts one cluster (:class:`SharedUnits`; xdist's own ``loadgroup`` does
  nothing on pytest 9: xdist 3.8 marks a test's group by rewriting ``item._nodeid``,
  which pytest 9 no longer reads).
- **The slowest files start first.** ``tests/slow_files.txt`` gives each known slow
  file its seconds; the files are ordered by them (longest first, xdist's own reorder
  by test count turned off), the rest keep pytest's order behind them, so no
  10-minute file starts last and runs alone.
- **PostgreSQL, MariaDB and Kafka are one server each.** Both workers reuse it
  (``tests/_postgres.py``, ``tests/_mariadb.py`` and ``tests/_kafka.py`` start it under a
  file lock), neither
  stops it: the controller does, at the end, when the run started it.
"""

from __future__ import annotations

import pytest
from xdist.scheduler import LoadFileScheduling

from tests import _kafka, _mariadb, _postgres
from tests._time_report import known_slow_files

#: Test files that run together in one process, by what they share.
SHARED: dict[str, tuple[str, ...]] = {
    "the standalone cluster": (
        "tests/integration/test_cluster_s3.py",
        "tests/integration/test_cluster_iceberg_s3.py",
        "tests/integration/connectors/rest/test_rest_cluster.py",
        "tests/integration/connectors/airbyte/test_airbyte_cluster.py",
    ),
}
#: The fixture each of :data:`SHARED`'s groups shares: a file that uses it must be listed.
SHARED_FIXTURES = {"the standalone cluster": "cluster"}


def is_worker(config: pytest.Config) -> bool:
    """True in a process xdist started (which runs tests but does not see the whole run)."""
    return hasattr(config, "workerinput")


def under_xdist(config: pytest.Config) -> bool:
    """True in a controller that hands tests to workers, and in those workers."""
    return is_worker(config) or bool(getattr(config.option, "numprocesses", None))


def order_by_cost(items: list[pytest.Item]) -> None:
    """Put the files known to be slowest first, longest first (in place)."""
    costs = known_costs()
    first_seen: dict[str, int] = {}
    for index, item in enumerate(items):
        first_seen.setdefault(_module_of(item), index)
    items.sort(key=lambda item: (-costs.get(_module_of(item), 0.0),
                                 first_seen[_module_of(item)]))


class SharedUnits(LoadFileScheduling):
    """``loadfile``, except that the files of each :data:`SHARED` group are one unit."""

    _unit_of = {path: f"<{group}>" for group, paths in SHARED.items() for path in paths}

    def _split_scope(self, nodeid: str) -> str:
        path = nodeid.split("::", 1)[0]
        return self._unit_of.get(path, path)


def check_shared(items: list[pytest.Item]) -> None:
    """Fail the collection if a file uses a shared fixture but is not in its group: it
    would start a second cluster in the other process."""
    for group, fixture in SHARED_FIXTURES.items():
        strays = sorted({_module_of(item) for item in items
                         if fixture in getattr(item, "fixturenames", ())
                         and _module_of(item) not in SHARED[group]})
        if strays:
            raise pytest.UsageError(f"{', '.join(strays)} use the {fixture!r} fixture: add "
                                    f"them to {group!r} in tests/_workers.py SHARED")


def mark_slow(items: list[pytest.Item]) -> None:
    """Mark ``slow`` every integration test (a Spark session, servers, CLI processes), so
    ``-m "not slow"`` is the developers' fast loop: every module's unit tests."""
    for item in items:
        if _module_of(item).startswith("tests/integration/"):
            item.add_marker(pytest.mark.slow)


def known_costs() -> dict[str, float]:
    """Seconds per known slow file: the first word of its reason in ``tests/slow_files.txt``."""
    costs: dict[str, float] = {}
    for path, why in known_slow_files().items():
        first = why.split(maxsplit=1)[0] if why else ""
        costs[path] = float(first.rstrip("s")) if first.rstrip("s").isdigit() else 60.0
    return costs


def _module_of(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


class ServerOwner:
    """Stops, at the end of an xdist run, the PostgreSQL and MariaDB servers and the Kafka
    broker the run started (one that ran before the run is left running)."""

    def __init__(self) -> None:
        self.servers = [server for server in (_postgres, _mariadb, _kafka) if not server.running()]

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        for server in self.servers:
            if server.running():
                server.stop()


class Scheduler:
    """Hands xdist the scheduler of :class:`SharedUnits` when the run asks for ``loadfile``."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: object
                                    ) -> LoadFileScheduling | None:
        if config.getvalue("dist") != "loadfile":
            return None
        return SharedUnits(config, log)


def configure(config: pytest.Config) -> None:
    """Called from ``tests/conftest.py``'s ``pytest_configure``."""
    if under_xdist(config) and not is_worker(config):
        config.pluginmanager.register(ServerOwner(), "headwater-server-owner")
        config.pluginmanager.register(Scheduler(), "headwater-scheduler")
