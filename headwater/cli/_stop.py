"""SIGINT and SIGTERM ask a sync to stop after the commits in flight; a second one aborts.

``headwater sync`` (with or without ``--watch``), ``replay`` and ``backfill``
run their engine inside :func:`stop_on_signals` (``serve`` too, for all its
runs at once: see :mod:`headwater.cli._serve`):

* the first SIGINT (Ctrl-C) or SIGTERM calls the engine's
  :meth:`~headwater.engine.SyncEngine.request_stop`: no checkpoint starts any
  more, the ones being committed commit, the run ends ``stopped`` and the next
  sync continues it (exit code 130);
* a second one aborts at once: the handlers that were there before are put
  back and the signal delivered to them again.  For SIGINT that is PySpark's
  own handler (cancel every Spark job, raise ``KeyboardInterrupt``: exit code
  130); for SIGTERM the default, which ends the process.  Either way the run
  is left ``running``, exactly like a killed sync, and resumed as one.

Spark must be started *before* the handlers are installed: creating a
SparkContext in the main thread replaces the SIGINT handler with PySpark's,
which would turn the first Ctrl-C into an abort.  A terminal's Ctrl-C reaches
the whole foreground process group; Spark's JVM ignores SIGINT and its Python
workers live in a process group of their own, so only this process sees it.
SIGTERM is different: the JVM dies of it, so it must be sent to this process
alone (``kill PID``; under systemd ``KillMode=mixed``), not to its group.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from headwater.errors import ExitCode

if TYPE_CHECKING:
    from headwater.engine import SyncResult

__all__ = ["STOPPED_EXIT_CODE", "stop_on_signals", "sync_exit_code"]

log = logging.getLogger(__name__)

#: Exit code of a sync that stopped on request with checkpoints left (128 + SIGINT).
STOPPED_EXIT_CODE = ExitCode.STOPPED

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def stop_on_signals(request_stop: Callable[[str], None]) -> Iterator[None]:
    """Within the block, SIGINT/SIGTERM call ``request_stop(reason)``; a second one aborts.

    Main thread only (Python delivers signals there).  ``request_stop`` runs
    on a thread of its own: a handler interrupts the main thread anywhere,
    possibly while it holds the lock of the very ``threading.Event`` the
    request sets (``Event.wait`` in the ``--watch`` loop), and would deadlock.
    """
    if threading.current_thread() is not threading.main_thread():
        # Python installs handlers from the main thread only (the CLI run from a
        # thread, as some embedders do): the sync then simply runs to its end.
        log.debug("not the main thread: SIGINT/SIGTERM keep their handlers")
        yield
        return
    previous: dict[int, Any] = {}
    received: list[str] = []

    def restore() -> None:
        for signum, old in previous.items():
            signal.signal(signum, old)

    def handler(signum: int, frame: Any) -> None:
        name = signal.Signals(signum).name
        if received:
            log.warning("%s again: aborting now; the next sync resumes the run", name)
            restore()
            signal.raise_signal(signum)
            return
        received.append(name)
        log.warning("%s: stopping after the commits in progress (%s again aborts at once)",
                    name, "Ctrl-C" if signum == signal.SIGINT else name)
        threading.Thread(target=request_stop, args=(f"{name} received",),
                         name="hw-stop", daemon=True).start()

    for sig in _SIGNALS:
        previous[sig] = signal.signal(sig, handler)
    try:
        yield
    finally:
        restore()


def sync_exit_code(result: SyncResult) -> int:
    """0 succeeded, 4 warned, 1 failed, 130 stopped on request with checkpoints left; a run
    stopped because a commit's outcome is unknown exits with its error's code (1, or 3)."""
    if result.status == "succeeded":
        return 0
    if result.status == "warned":
        return ExitCode.WARNED
    if result.exit_code is not None:
        return result.exit_code
    return STOPPED_EXIT_CODE if result.status == "stopped" else ExitCode.FAILED
