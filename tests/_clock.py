"""The scheduler's clock for tests: time moves only when the scheduler sleeps."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta


class FastClock:
    """``sleep`` moves time on by exactly what the scheduler asked for, at once.

    ``real_wait_s`` also waits that long for real on each sleep (ending early when
    ``stop`` is set), so another thread, say a signal's handler, gets to run.
    """

    def __init__(self, start: datetime = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC),
                 real_wait_s: float = 0.0) -> None:
        self.current = start
        self.real_wait_s = real_wait_s

    def now(self) -> datetime:
        return self.current

    def sleep(self, seconds: float, stop: threading.Event) -> None:
        self.current += timedelta(seconds=seconds)
        if self.real_wait_s:
            stop.wait(self.real_wait_s)

    def advance(self, **delta: float) -> None:
        self.current += timedelta(**delta)
