"""Two pytest processes on CI's two cores (``pytest-xdist``), and what they must share.

Much of the suite waits: CLI processes starting a JVM, servers, HTTP latencies,
a task paused while it reads. ``scripts/test`` runs it under ``-n 2 --dist
loadfile --no-loadscope-reorder`` (docs/development.md), and this module makes that
safe and balanced:

- **A test file is one unit of work** (``loadfile``): its module-scoped fixtures (a
  module's crash cases run side by side by its first test, ``_side_by_side``; a
  catalog server per module) run once. (``loadgroup`` would let the ``cluster`` files
  share one standalone cluster, but it does nothing on pytest 9: xdist 3.8 marks a
  test's group by rewriting ``item._nodeid``, which pytest 9 no longer reads.)
- **The slowest files start first.** ``tests/slow_files.txt`` gives each known slow
  file its seconds; the files are ordered by them (longest first, xdist's own reorder
  by test count turned off), the rest keep pytest's order behind them, so no
  10-minute file starts last and runs alone.
- **PostgreSQL is one server.** Both workers reuse it (``tests/_postgres.py``
  starts it under a file lock), neither stops it: the controller does, at the end,
  when the run started it.
"""

from __future__ import annotations

import pytest

from tests import _postgres
from tests._time_report import known_slow_files


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
