"""Seconds a sync spends per step, so the fixed cost of a small sync can be seen and cut.

A sync of a few rows is mostly fixed cost (Spark start, planning, table
look-ups, metadata store writes, commits); the figures here, shown in
``headwater sync --json`` as ``steps_s`` and logged at debug level, say which
step it is.  Steps run on several threads (streams, lanes): each step's
seconds are summed over the threads, so the figures can add up to more than
the wall time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager


class StepTimes:
    """Summed seconds per step name, in the order steps first ran; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seconds: dict[str, float] = {}

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        began = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - began)

    def add(self, name: str, seconds: float) -> None:
        with self._lock:
            self._seconds[name] = self._seconds.get(name, 0.0) + seconds

    def to_dict(self) -> dict[str, float]:
        with self._lock:
            return {name: round(seconds, 3) for name, seconds in self._seconds.items()}


__all__ = ["StepTimes", "seconds_since_process_start"]


def seconds_since_process_start() -> float | None:
    """How long this process has been running (Linux's ``/proc``; ``None`` elsewhere).

    What a CLI command paid before its own code ran: the interpreter's start
    and the imports.
    """
    import os

    try:
        with open("/proc/self/stat") as stat:
            started_ticks = int(stat.read().rsplit(")", 1)[1].split()[19])
        with open("/proc/uptime") as uptime:
            up = float(uptime.read().split()[0])
        return max(0.0, up - started_ticks / os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError, IndexError):
        return None
