"""The driver's early reads in a process of their own, forked before Spark starts.

A thread of the driver making the run's early calls (:mod:`._early_reads`)
shares the GIL with the driver's main thread, which meanwhile imports PySpark,
starts Spark through py4j, collects garbage and plans: the calls' event loop
waited for it, and the reading window reached 0.88-0.92 of the ideal rate
(``bench/RESULTS.md``).  A child process has a GIL of its own.  It is forked,
not spawned: it starts making calls within milliseconds, with the streams,
settings and plan context already built, instead of importing Headwater again.

When a fork is safe (:func:`fork_refused`): on Linux, and with no Python
thread but the caller's (``headwater sync`` forks in ``Source.prepare``,
before the JVM, py4j or the progress display start any).  Native threads that
libraries started at import (pyarrow's jemalloc background thread, OpenBLAS's
pool) re-initialise themselves in the child through their own fork handlers,
and the child never uses those libraries.  Anywhere else the reads stay a
thread of the driver, as before.

What the child does and must not do:

* it touches only the reads: the driver's open files (the metadata store's
  SQLite files) stay open but unused, objects alive at the fork are frozen
  out of its garbage collector (:func:`gc.freeze`: a finaliser of the
  driver's, a connection closed say, never runs in it), the driver's event
  listeners are dropped, its stdout goes to ``/dev/null`` (``--json`` output
  is the driver's alone) and it leaves with :func:`os._exit`: no ``atexit``
  handler of the driver's, no flush of buffers the driver will flush itself;
* its log records go to the driver over a pipe, formatted, and the driver's
  handlers (with their secret-masking filters) write them: nothing reaches a
  log from the child that would not from the driver;
* it never outlives the driver: the kernel kills it when the thread that
  forked it ends (``PR_SET_PDEATHSIG``: the CLI's main thread, so the
  process), and a watcher in it leaves at once when the driver is gone (its
  parent process changed, or the driver's end of the stop pipe closed) or the
  run's folder was removed (nothing it reads can be used).  Ctrl-C is the
  driver's to handle (the child ignores SIGINT and stops when asked, or with
  the driver);
* the driver reaps it (no zombie) from a thread that hears its messages and,
  once it has ended however it ended, says so (``done``).
"""

from __future__ import annotations

import contextlib
import gc
import logging
import logging.handlers
import os
import select
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable
from multiprocessing.connection import Connection, Pipe
from pathlib import Path
from typing import Any

from headwater import _events

__all__ = ["ReaderProcess", "fork_refused"]

log = logging.getLogger(__name__)

#: How often the child looks whether the driver is gone, the folder removed or a
#: stop asked for (seconds): a stop waits this long at most to be heard.
WATCH_S = 0.05
#: ``prctl`` option: the signal the kernel sends a process when its parent ends.
_PR_SET_PDEATHSIG = 1

#: What the child's work returns: a small picklable value (here, calls started).
Work = Callable[[threading.Event], Any]


def fork_refused() -> str | None:
    """Why the early reads cannot run in a forked process here, or None if they can."""
    if not sys.platform.startswith("linux") or not hasattr(os, "fork"):
        return f"no fork on {sys.platform} (the reads stay a thread of the driver)"
    others = [t.name for t in threading.enumerate() if t is not threading.current_thread()]
    if others:
        return f"other threads run in the driver ({', '.join(others)}): a fork could deadlock"
    return None


class ReaderProcess:
    """``work(stop)`` in a forked child; ``done(result)`` in the driver once it ended.

    ``stop`` is an event set in the child when the driver asks (:meth:`stop`);
    ``result`` is what ``work`` returned, or None if the child ended without
    saying (killed, or left because the driver or ``folder`` went away).
    """

    def __init__(self, work: Work, folder: Path, done: Callable[[Any], None]) -> None:
        self.work = work
        self.folder = folder
        self.done = done
        self.pid = 0
        #: The driver's end of the stop pipe; -1 once closed (a number closed and
        #: reused by another file must never be written to).
        self._stop_w = -1
        self._stop_lock = threading.Lock()
        self._listener: threading.Thread | None = None

    def start(self) -> int:
        """Fork the child; its process id (the caller names it in the folder)."""
        stop_r, self._stop_w = os.pipe()
        report_r, report_w = Pipe(duplex=False)
        parent = os.getpid()
        with warnings.catch_warnings():
            # Python 3.12+ warns of any native thread; see fork_refused for those left.
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(self._stop_w)
            report_r.close()
            _child(self.work, self.folder, parent, stop_r, report_w)
        os.close(stop_r)
        report_w.close()
        self.pid = pid
        self._listener = threading.Thread(target=self._listen, args=(report_r,),
                                          name="hw-early-reads-listener", daemon=True)
        self._listener.start()
        return pid

    def stop(self) -> None:
        """Ask the child to start no further call (those under way end as usual)."""
        with self._stop_lock, contextlib.suppress(OSError):  # it has ended already
            if self._stop_w >= 0:
                os.write(self._stop_w, b"s")

    def join(self, timeout_s: float | None = None) -> bool:
        """Wait up to ``timeout_s`` for the child to end and be reaped; whether it has."""
        assert self._listener is not None
        self._listener.join(timeout_s)
        return not self._listener.is_alive()

    def _listen(self, report: Connection) -> None:
        """Hear the child's log records and result until it ends; reap it; say done."""
        result = None
        try:
            while True:
                kind, value = report.recv()
                if kind == "log":
                    logger = logging.getLogger(value.name)
                    if logger.isEnabledFor(value.levelno):
                        logger.handle(value)
                else:
                    result = value
        except (EOFError, OSError):
            pass  # the child has ended (its end of the pipe closed with it)
        finally:
            report.close()
            with contextlib.suppress(ChildProcessError):
                _, status = os.waitpid(self.pid, 0)
                log.debug("early reads' process %d ended: %s", self.pid,
                          f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
                          else f"exit {os.WEXITSTATUS(status)}")
            with self._stop_lock:
                os.close(self._stop_w)
                self._stop_w = -1
            self.done(result)


class _Forwarder(logging.handlers.QueueHandler):
    """The child's one log handler: each record, formatted, to the driver."""

    def __init__(self, report: Connection) -> None:
        super().__init__(None)  # type: ignore[arg-type]  # enqueue sends instead
        self._report = report
        self._sending = threading.Lock()  # records come from any of the child's threads

    def enqueue(self, record: logging.LogRecord) -> None:
        with self._sending:
            self._report.send(("log", record))


def _child(work: Work, folder: Path, parent: int, stop_r: int, report: Connection) -> None:
    """The forked child's whole life (see the module docstring); leaves with ``_exit``."""
    code = 0
    try:
        _die_with(parent)
        gc.freeze()
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        _events.clear()
        _quiet_stdout()
        _forward_logs(report)
        stop = threading.Event()
        threading.Thread(target=_watch, args=(folder, parent, stop_r, stop),
                         name="hw-early-reads-watch", daemon=True).start()
        result = work(stop)
        with contextlib.suppress(OSError):
            report.send(("result", result))
    except BaseException as exc:  # a child never unwinds into the driver's code
        code = 1
        with contextlib.suppress(BaseException):
            log.debug("early reads' process failed: %r", exc)
    finally:
        os._exit(code)


def _die_with(parent: int) -> None:
    """Have the kernel kill this process when the driver's forking thread ends."""
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # it ended before the request was in place
        os._exit(0)


def _quiet_stdout() -> None:
    """Nothing the child writes reaches the driver's stdout (its ``--json``)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
    sys.stdout = open(os.devnull, "w")  # noqa: SIM115  # the child's until _exit


def _forward_logs(report: Connection) -> None:
    """Send the child's log records to the driver, filtered as the driver's handlers
    filter them (their secret masking among them), and only there."""
    root = logging.getLogger()
    forwarder = _Forwarder(report)
    for handler in root.handlers:
        for check in handler.filters:
            forwarder.addFilter(check)
    root.handlers = [forwarder]


def _watch(folder: Path, parent: int, stop_r: int, stop: threading.Event) -> None:
    """Set ``stop`` when the driver asks; leave at once when it or the folder is gone."""
    while True:
        if not stop.is_set() and select.select([stop_r], [], [], WATCH_S)[0]:
            stop.set()  # a byte, or the driver's end closed
        elif stop.is_set():
            time.sleep(WATCH_S)
        if os.getppid() != parent or not folder.is_dir():
            os._exit(0)  # nothing it reads can be used any more
