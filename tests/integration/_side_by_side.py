"""Run the cases of a module's CLI scenarios two at a time; each test still reports its own.

A crash test's case spends most of its time in CLI processes (a Python start,
a JVM start, Spark's first job, a task pausing while it reads) that leave the
machine's two cores idle much of the time: one sync of the crash tests' source
used 12-14 CPU-seconds (driver, JVMs and Python workers, read from ``/proc``),
and ``test_crash_resume``'s 52 syncs took 15-20 minutes on an idle 2-core
machine, about 20 s of wall time each.  Cases that share nothing (each its own
folder, metadata store and table) can run side by side.  pytest runs tests
one after the other, so the module collects the selected cases of its
side-by-side tests (:data:`Scenarios`), and the first of them to run runs them
all, :data:`WIDTH` at a time in threads; every test then raises its own case's
error, with its traceback, or passes (pytest's durations show the module's
total on that first test).
Only the cases pytest selected run (``-k``, ``--lf``, ``-x`` stopping early
leaves the rest unreported, as it would anyway).

The test process's Spark session is shared by the threads (PySpark pins each
Python thread to a JVM thread of its own); everything else a case touches is
its own.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

#: How many cases run at once: two CLI processes on the two cores of the CI machine.
WIDTH = 2

#: One case: ``scenario(spark, tmp_path, **the test's parameters)``; the scenario asserts,
#: the test reports.
Scenario = Callable[..., None]
#: The side-by-side tests of a module: test function name -> its scenario.
Scenarios = Mapping[str, Scenario]


class SideBySide:
    """The outcomes of a module's selected side-by-side cases, run on first demand."""

    def __init__(self, cases: Mapping[str, Callable[[], None]], width: int = WIDTH) -> None:
        self._cases = dict(cases)
        self._width = width
        self._outcomes: dict[str, BaseException | None] | None = None
        self._lock = threading.Lock()

    def check(self, nodeid: str) -> None:
        """Raise what the case of test ``nodeid`` raised (running every case the first time)."""
        with self._lock:
            if self._outcomes is None:
                self._outcomes = self._run_all()
        error = self._outcomes[nodeid]
        if error is not None:
            raise error

    def _run_all(self) -> dict[str, BaseException | None]:
        def outcome(case: Callable[[], None]) -> BaseException | None:
            try:
                case()
            except BaseException as error:  # reported by the case's own test
                return error
            return None

        pool = ThreadPoolExecutor(max_workers=self._width, thread_name_prefix="case")
        futures = {nodeid: pool.submit(outcome, case) for nodeid, case in self._cases.items()}
        try:
            return {nodeid: future.result() for nodeid, future in futures.items()}
        finally:  # on Ctrl-C, no case that has not started yet starts
            pool.shutdown(wait=False, cancel_futures=True)


def side_by_side(request: pytest.FixtureRequest, spark: Any,
                 tmp_path_factory: pytest.TempPathFactory, scenarios: Scenarios) -> SideBySide:
    """The side-by-side cases pytest selected in ``request``'s module (a module-scoped
    fixture's request), each with a folder of its own, in the order pytest would run them."""
    cases: dict[str, Callable[[], None]] = {}
    for item in request.session.items:
        if not isinstance(item, pytest.Function) or item.module is not request.module:
            continue
        scenario = scenarios.get(item.originalname)
        if scenario is None:
            continue
        params = dict(item.callspec.params) if hasattr(item, "callspec") else {}
        # Named as pytest names ``tmp_path``: brackets in a path would be quoted in its URI.
        folder = tmp_path_factory.mktemp(re.sub(r"\W", "_", item.name)[:30], numbered=True)
        cases[item.nodeid] = functools.partial(scenario, spark, folder, **params)
    return SideBySide(cases)
