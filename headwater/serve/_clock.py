"""Time for the scheduler, behind a two-method interface so tests can run it fast."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    """What the scheduler needs of time: the current instant, and a wait that a stop ends."""

    def now(self) -> datetime:
        """The current time, time-zone aware."""

    def sleep(self, seconds: float, stop: threading.Event) -> None:
        """Wait ``seconds``, or less when ``stop`` is set."""


class SystemClock:
    """The wall clock (UTC)."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def sleep(self, seconds: float, stop: threading.Event) -> None:
        stop.wait(seconds)


__all__ = ["Clock", "SystemClock"]
