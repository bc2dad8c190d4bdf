"""Two pytest processes on CI's two cores (``pytest-xdist``), and what they must share.

Much of the suite waits: CLI processes starting a JVM, servers, HTTP latencies,
a task paused while it reads. ``scripts/test`` runs it under ``-n 2 --dist
loadgroup --no-loadscope-reorder`` (xdist's own order would be by test count;
docs/development.md says why, with the figures), and this module makes that safe and
balanced:

- **A module is one unit of work.** Module-scoped fixtures (a module's crash
  cases run side by side by its first test, ``_side_by_side``; a catalog server
  per module) must run once, so every test gets its module as its ``xdist_group``
  unless it names a group of its own; the ``cluster`` tests share one group, so one
  worker starts the standalone master and workers once.
- **The slowest units start first.** ``tests/slow_files.txt`` gives each known slow
  file its seconds; the units are ordered by them (longest first), the rest keep
  pytest's order behind them, so no 10-minute module starts last and runs alone.
- **PostgreSQL is one server.** Both workers reuse it (``tests/_postgres.py``
  starts it under a file lock), neither stops it: the controller does, at the end,
  when the run started it.
"""

from __future__ import annotations

import pytest

from tests import _postgres
from tests._time_report import known_slow_files

#: The group of every ``cluster`` test: one standalone cluster per run.
CLUSTER_GROUP = "cluster"


def is_worker(config: pytest.Config) -> bool:
    """True in a process xdist started (which runs tests but does not see the whole run)."""
    return hasattr(config, "workerinput")


def under_xdist(config: pytest.Config) -> bool:
    """True in a controller that hands tests to workers, and in those workers."""
    return is_worker(config) or bool(getattr(config.option, "numprocesses", None))


def group_and_order(items: list[pytest.Item]) -> None:
    """Give each test its unit of work and put the slowest units first (in place)."""
    costs = known_costs()
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            group = CLUSTER_GROUP if item.get_closest_marker("cluster") else _module_of(item)
            item.add_marker(pytest.mark.xdist_group(group))
    modules: dict[str, set[str]] = {}
    first_seen: dict[str, int] = {}
    for index, item in enumerate(items):
        unit = _group_of(item)
        modules.setdefault(unit, set()).add(_module_of(item))
        first_seen.setdefault(unit, index)
    unit_cost = {unit: sum(costs.get(module, 0.0) for module in in_unit)
                 for unit, in_unit in modules.items()}
    items.sort(key=lambda item: (-unit_cost[_group_of(item)], first_seen[_group_of(item)]))


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


def _group_of(item: pytest.Item) -> str:
    marker = item.get_closest_marker("xdist_group")
    assert marker is not None
    return str(marker.args[0] if marker.args else marker.kwargs["name"])


class PostgresOwner:
    """Stops, at the end of an xdist run, the PostgreSQL server the run started."""

    def __init__(self) -> None:
        self.was_running = _postgres.running()

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if not self.was_running and _postgres.running():
            _postgres.stop()


def configure(config: pytest.Config) -> None:
    """Called from ``tests/conftest.py``'s ``pytest_configure``."""
    if under_xdist(config) and not is_worker(config):
        config.pluginmanager.register(PostgresOwner(), "headwater-postgres-owner")
