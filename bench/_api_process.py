"""The loopback test API (tests/api_server.py) in a process of its own, for the benchmarks.

A real API never shares a process with the client or with Spark's driver.  In
the benchmark process it would: its threads would contend for the driver's GIL
and its CPU would count as the sync's.  Here it runs in a child process; the
benchmark asks it for the arrival times of the calls it saw (``time.monotonic``
is the machine's one monotonic clock on Linux, so they compare with the
parent's) and reads its CPU time from ``/proc``.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.api_server import ApiData

__all__ = ["ApiProcess"]


def _serve(events: int, latency_s: float, requests: Any, replies: Any,
           data: Callable[[], ApiData] | None, limit: int) -> None:
    from tests.api_server import ApiData, running

    with running(data() if data is not None else ApiData(events=events),
                 latency_s=latency_s, limit=limit) as api:
        replies.put(api.url)
        while (request := requests.get()) is not None:
            if request == "peak":  # the most calls in flight at once since the last ask
                replies.put(api.max_in_flight)
                api.max_in_flight = api.in_flight
            elif isinstance(request, tuple):  # ("calls", since): arrival times and paths
                replies.put([(t, path) for t, path, _ in list(api.calls)[request[1]:]])
            else:
                replies.put([t for t, _, _ in list(api.calls)[request:]])


class ApiProcess:
    """The API serving ``events`` bench events after ``latency_s`` per call; a context manager.

    ``data`` (a picklable callable, run in the API's process) builds other data
    instead; ``limit`` is the API's own rate limit in calls per second.
    """

    def __init__(self, events: int, latency_s: float, *,
                 data: Callable[[], ApiData] | None = None, limit: int = 1000) -> None:
        context = multiprocessing.get_context("spawn")
        self._requests, self._replies = context.Queue(), context.Queue()
        self._process = context.Process(
            target=_serve, daemon=True,
            args=(events, latency_s, self._requests, self._replies, data, limit))
        self._process.start()
        self.url: str = self._replies.get(timeout=120)

    def __enter__(self) -> ApiProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self._requests.put(None)
        self._process.join(timeout=30)

    def arrivals(self, since: int = 0) -> list[float]:
        """When each call from the ``since``-th on arrived (``time.monotonic`` seconds)."""
        self._requests.put(since)
        arrivals: list[float] = self._replies.get(timeout=120)
        return arrivals

    def calls(self, since: int = 0) -> list[tuple[float, str]]:
        """When each call from the ``since``-th on arrived, and its path."""
        self._requests.put(("calls", since))
        calls: list[tuple[float, str]] = self._replies.get(timeout=120)
        return calls

    def peak_in_flight(self) -> int:
        """The most calls the API was answering at once since the last ask (then resets)."""
        self._requests.put("peak")
        peak: int = self._replies.get(timeout=120)
        return peak

    def cpu_s(self) -> float:
        """The API process's user + system CPU seconds so far (Linux)."""
        pid = self._process.pid
        assert pid is not None
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
