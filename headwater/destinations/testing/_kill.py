"""A kill of the sync at one of its named moments, simulated inside this process.

Why simulated: a destination author's test runs in their pytest process, on
their Spark session; a real SIGKILL would need a CLI subprocess and a JVM of
its own (half a minute).  :class:`Killed` is a ``BaseException``, which the
engine never catches (it catches ``Exception``), so the run stays unfinished
as a SIGKILL leaves it; once raised, every thread that reaches a later moment
raises it too, so no commit lane commits or releases past the "death".  Only
``finally`` blocks still run (the connection's lock is released).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from headwater import _events


class Killed(BaseException):
    """The simulated kill (see the module docstring)."""


@contextmanager
def killed_at(moment: str, nth: int = 1,
              before: Callable[[], None] | None = None) -> Iterator[None]:
    """Kill the sync the ``nth`` time it reaches ``moment`` (``after-commit``: a
    checkpoint's commit landed, its state not yet released); ``before`` runs just
    before the kill (a copy of the metadata store, say)."""
    passes = 0
    dead = False
    lock = threading.Lock()

    def listener(reached: str) -> None:
        nonlocal passes, dead
        if dead:
            raise Killed(f"killed earlier, at {moment} (pass {nth})")
        if reached != moment:
            return
        with lock:
            passes += 1
            hit = passes == nth
        if hit:
            if before is not None:
                before()
            dead = True
            raise Killed(f"killed at {moment} (pass {nth})")

    _events.listen(listener)
    try:
        yield
    finally:
        _events.forget(listener)


@contextmanager
def on_moment(moment: str, nth: int, action: Callable[[], None]) -> Iterator[None]:
    """Run ``action`` (no kill) the ``nth`` time the sync reaches ``moment``."""
    passes = 0

    def listener(reached: str) -> None:
        nonlocal passes
        if reached == moment:
            passes += 1
            if passes == nth:
                action()

    _events.listen(listener)
    try:
        yield
    finally:
        _events.forget(listener)
