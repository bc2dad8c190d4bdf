"""Where the suite's minutes go: a per-file and per-test time table after every run.

The suite has a budget (25 minutes of pytest on the 2-core machine CI runs on,
``docs/development.md``), and a budget is kept by looking, not by guessing. This
plugin adds up each test's setup, call and teardown as pytest reports them (on the
controller, so a run under ``pytest-xdist`` is counted whole) and writes, under
``test-artifacts/times/``:

- ``times.md``: the run's wall time; first, every test file over 60 s that
  ``tests/slow_files.txt`` does not name (a new slow file is seen the day it lands);
  then every file with its seconds, test count and slowest test; then the slowest
  50 tests;
- ``times.json``: the same figures for a machine.

Seconds are summed per test, so under two workers the files' sum is about twice
the wall time. A module-scoped fixture's cost lands on the module's first test,
as pytest reports it.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: Where the report goes (CI keeps ``test-artifacts/``).
REPORT_DIR = REPO / "test-artifacts" / "times"
#: The test files known to take more than a minute, each with why (one per line).
KNOWN_SLOW = Path(__file__).with_name("slow_files.txt")
#: A file slower than this, and not in :data:`KNOWN_SLOW`, heads the report.
SLOW_FILE_S = 60.0


@dataclass
class _FileTimes:
    seconds: float = 0.0
    tests: set[str] = field(default_factory=set)
    per_test: dict[str, float] = field(default_factory=lambda: defaultdict(float))


class TimeReport:
    """Collects every test's phases and writes the tables at the end of the session."""

    def __init__(self) -> None:
        self.files: dict[str, _FileTimes] = defaultdict(_FileTimes)
        self.started = time.monotonic()
        self.outcomes: dict[str, int] = defaultdict(int)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        path = report.nodeid.split("::", 1)[0]
        times = self.files[path]
        times.seconds += report.duration
        times.tests.add(report.nodeid)
        times.per_test[report.nodeid] += report.duration
        if report.when == "call" or (report.when == "setup" and not report.passed):
            self.outcomes[report.outcome] += 1

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        wall = time.monotonic() - self.started
        if not self.files:
            return
        REPORT_DIR.mkdir(parents=True, exist_ok=True)
        known = known_slow_files()
        by_time = sorted(self.files.items(), key=lambda item: -item[1].seconds)
        tests = sorted(((nodeid, seconds) for _, times in by_time
                        for nodeid, seconds in times.per_test.items()),
                       key=lambda item: -item[1])
        (REPORT_DIR / "times.md").write_text(render(wall, by_time, tests, known,
                                                    dict(self.outcomes)))
        (REPORT_DIR / "times.json").write_text(json.dumps({
            "wall_s": round(wall, 1),
            "outcomes": dict(self.outcomes),
            "files": {path: {"seconds": round(times.seconds, 2), "tests": len(times.tests)}
                      for path, times in by_time},
            "tests": {nodeid: round(seconds, 2) for nodeid, seconds in tests},
        }, indent=1))

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.files:
            terminalreporter.write_line(
                f"time report: {(REPORT_DIR / 'times.md').relative_to(REPO)}")


def known_slow_files() -> dict[str, str]:
    """``tests/slow_files.txt``: ``path  # why`` per line, blank lines and comments skipped."""
    known: dict[str, str] = {}
    if KNOWN_SLOW.is_file():
        for line in KNOWN_SLOW.read_text().splitlines():
            path, _, why = line.partition("#")
            if path.strip():
                known[path.strip()] = why.strip()
    return known


def render(wall: float, by_time: list[tuple[str, _FileTimes]],
           tests: list[tuple[str, float]], known: dict[str, str],
           outcomes: dict[str, int]) -> str:
    """The Markdown table a person reads (see the module's docstring)."""
    total = sum(times.seconds for _, times in by_time)
    counted = ", ".join(f"{count} {outcome}" for outcome, count in sorted(outcomes.items()))
    lines = [f"# Test times: {wall / 60:.1f} min of wall time, {total / 60:.1f} min summed "
             f"over tests ({counted})", ""]
    new_slow = [(path, times) for path, times in by_time
                if times.seconds > SLOW_FILE_S and path not in known]
    if new_slow:
        lines.append(f"**Over {SLOW_FILE_S:.0f} s and not in tests/slow_files.txt:**")
        lines += [f"- `{path}`: {times.seconds:.0f} s" for path, times in new_slow]
    else:
        lines.append(f"No file over {SLOW_FILE_S:.0f} s outside tests/slow_files.txt.")
    lines += ["", "| file | s | share | tests | slowest test (s) |",
              "| --- | ---: | ---: | ---: | --- |"]
    for path, times in by_time:
        slowest, slowest_s = max(times.per_test.items(), key=lambda item: item[1])
        share = times.seconds / total if total else 0.0
        lines.append(f"| `{path}` | {times.seconds:.1f} | {share:.1%} | {len(times.tests)} "
                     f"| `{slowest.split('::', 1)[-1]}` ({slowest_s:.1f}) |")
    lines += ["", "## The slowest 50 tests", "", "| test | s |", "| --- | ---: |"]
    lines += [f"| `{nodeid}` | {seconds:.1f} |" for nodeid, seconds in tests[:50]]
    return "\n".join(lines) + "\n"


def pytest_configure(config: pytest.Config) -> None:
    """Register the report (called from ``tests/conftest.py``)."""
    # Only the process that sees every report writes (the controller under xdist).
    if not hasattr(config, "workerinput"):
        config.pluginmanager.register(TimeReport(), "headwater-time-report")
