"""Leaving the process at once when a command's work is durable and its answer printed.

After ``headwater sync`` has printed its summary, nothing the user waits for is
left: the rows and state are committed, the metadata store holds the run's end
(the engine writes it before the summary exists).  A normal interpreter exit
then still tears every module and object down one by one (PySpark, pyarrow,
the HTTP client, the run's pages): ``bench/substream_api_vs_cdk.py`` measured
0.4-1.9 s from the last ``atexit`` handler to the process's end, paid on every
sync for nothing.

A command that has reached that point calls :func:`done`; the console entry
point (:func:`headwater.cli.app.main`, never a command run in-process by a
program or a test) then :func:`leave`\\ s: it does what a normal exit does that
can matter to anyone (waits for the threads that are not daemons, runs the
``atexit`` handlers: logging's flush, a connector process's clean-up; flushes
stdout and stderr) and skips the teardown.  The JVM notices its parent is gone
as it does after a normal exit (its stdin closes) and stops itself.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import sys
import threading
from typing import NoReturn

__all__ = ["done", "leave", "ready", "reset"]

_done = False


def done() -> None:
    """Say that the command's work is durable and its answer printed: the entry point
    may :func:`leave` instead of tearing the interpreter down."""
    global _done
    _done = True


def reset() -> None:
    """Forget an earlier :func:`done` (a command run in-process before this one)."""
    global _done
    _done = False


def ready() -> bool:
    """Whether a command said :func:`done` in this process."""
    return _done


def leave(code: int) -> NoReturn:
    """End the process with ``code`` as a normal exit would, without its teardown
    (an interpreter without the hooks used here exits normally)."""
    # The standard library's own steps of an exit, before the teardown: wait for
    # non-daemon threads (telling idle thread pools to end), then the atexit
    # handlers.  Private names, so looked up, not assumed.
    shutdown = getattr(threading, "_shutdown", None)
    run_exit_handlers = getattr(atexit, "_run_exitfuncs", None)
    if shutdown is None or run_exit_handlers is None:
        raise SystemExit(code)
    shutdown()
    run_exit_handlers()
    for stream in (sys.stdout, sys.stderr):
        # Closed, or a broken pipe: nothing more can be said.
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)
