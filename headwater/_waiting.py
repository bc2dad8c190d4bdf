"""Wait for futures from the main thread without going deaf to signals.

A SIGINT/SIGTERM that the kernel hands to another thread runs its Python
handler only when the main thread next runs Python code; a main thread
blocked in one untimed wait (``Future.result()``, ``Executor.shutdown``,
``Thread.join``) never does until the wait ends.  So the engine's wait for its
streams and ``serve``'s wait for its runs both wait in short timed steps.
"""

from __future__ import annotations

from collections.abc import Iterable
from concurrent.futures import Future, wait
from typing import Any

#: How long one step of the wait lasts: how late a signal's handler can run.
WAIT_STEP_S = 0.2


def wait_all(futures: Iterable[Future[Any]]) -> None:
    """Return once every future is done, waking every :data:`WAIT_STEP_S` meanwhile."""
    pending = set(futures)
    while pending:
        _, pending = wait(pending, timeout=WAIT_STEP_S)
