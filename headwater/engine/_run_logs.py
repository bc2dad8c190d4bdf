"""The log lines of a run, kept in the metadata store so the web page (and anyone
reading the store) can show them after the process that ran it is gone.

While a run runs, :func:`capture_run_logs` attaches a :class:`logging.Handler` to
the root logger.  It keeps only the records emitted *for this run*: a context
variable holds the capture in the thread that runs it, and the engine's thread
pools carry it to their threads (:func:`submit_in_run`).  So the runs of several
connections under one ``serve`` process each keep their own lines.  The capture
starts before the run has an id (its planning logs too); :func:`name_run_logs`
gives it the id once the run is recorded, and nothing is stored before that.  A run
resumed by a later sync (stopped or killed) adds its new attempt's lines after those its
earlier attempts stored.

What is kept is Headwater's INFO lines and above (the per-checkpoint lines, the
warnings and errors), whatever the console shows: ``headwater sync`` prints only
warnings without ``-v``, yet its runs keep the same lines as a run started from the
page or by ``serve``.  While a capture is active the ``headwater`` logger lets INFO
through (:func:`_info_while_capturing`); the console handler keeps its own level
(:func:`headwater.cli._common.setup_logging`).  Messages are masked with the
secret masking before they are stored.
Lines are written in batches from a helper thread about once a second, never
from the thread that logs (a log call inside a store transaction must not write
to the store), and a chatty run is bounded: its first :data:`KEEP_FIRST` and
last :data:`KEEP_LAST` lines are kept, the count of those left out can be read
back.  Storing the lines never fails a run: a store error drops them (DEBUG).
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, TypeVar

from headwater.config import mask
from headwater.metadata_store import MetadataStore, RunLogLine

log = logging.getLogger(__name__)

#: Lines kept from the start of a run, and from its end.
KEEP_FIRST = 500
KEEP_LAST = 500
#: Longest message kept (a longer one is cut, saying so).
MAX_MESSAGE_CHARS = 8000

_RUN: contextvars.ContextVar[RunLogCapture | None] = contextvars.ContextVar(
    "headwater_run_logs", default=None)
_T = TypeVar("_T")


def submit_in_run(pool: Executor, fn: Callable[..., _T], *args: Any) -> Future[_T]:
    """``pool.submit(fn, *args)`` with the submitting thread's run carried along, so the
    lines ``fn`` logs are that run's."""
    return pool.submit(contextvars.copy_context().run, fn, *args)


class RunLogCapture(logging.Handler):
    """Collects one run's records; :meth:`flush` writes them to the store."""

    def __init__(self, store: MetadataStore, run_id: str | None = None, *,
                 keep_first: int = KEEP_FIRST, keep_last: int = KEEP_LAST) -> None:
        super().__init__()
        self.store = store
        #: ``None`` until the run is recorded (:func:`name_run_logs`): lines wait meanwhile.
        self.run_id = run_id
        self.keep_first = keep_first
        self.keep_last = keep_last
        self._pending: list[RunLogLine] = []
        self._seq = 0
        self._flushing = threading.Lock()  # one flush at a time, so batches land in order

    def emit(self, record: logging.LogRecord) -> None:
        if _RUN.get() is not self:
            return
        try:
            message = record.getMessage()
        except Exception:
            message = str(record.msg)
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            message = f"{message}\n{record.exc_text}"
        if len(message) > MAX_MESSAGE_CHARS:
            message = message[:MAX_MESSAGE_CHARS] + " [cut]"
        self.acquire()
        try:
            self._seq += 1
            self._pending.append(RunLogLine(
                seq=self._seq, at=datetime.fromtimestamp(record.created, UTC),
                level=record.levelname, logger=record.name, message=mask(message)))
        finally:
            self.release()

    def flush(self) -> None:
        with self._flushing:
            self.acquire()
            try:
                run_id = self.run_id
                if run_id is None:
                    return
                lines, self._pending = self._pending, []
            finally:
                self.release()
            if not lines:
                return
            try:
                self.store.append_run_logs(run_id, lines, keep_first=self.keep_first,
                                           keep_last=self.keep_last)
            except Exception:  # the lines are not worth failing a run for
                log.debug("could not store %d log lines of run %s", len(lines), run_id,
                          exc_info=True)

    def belong_to(self, run_id: str) -> None:
        """The lines belong to ``run_id`` from now on, numbered after those it has stored
        already: a resumed run (stopped or killed, then resumed by a later sync) keeps its
        earlier attempts' lines, and numbering from 1 again would collide with them."""
        try:
            stored = self.store.last_run_log_seq(run_id)
        except Exception:  # the lines are not worth failing a run for
            log.debug("could not read the log lines stored for run %s", run_id, exc_info=True)
            stored = 0
        self.acquire()
        try:
            self.run_id = run_id
            self._pending = [replace(line, seq=line.seq + stored) for line in self._pending]
            self._seq += stored
        finally:
            self.release()


_CAPTURES = 0
_LEVEL_BEFORE: int | None = None
_CAPTURES_LOCK = threading.Lock()


def _info_while_capturing(change: int) -> None:
    """While any run captures (``change`` +1 when one starts, -1 when it ends), the
    ``headwater`` logger lets INFO through, then gets its own level back: a logger
    drops a record below its effective level before any handler sees it, so a root
    logger at WARNING (``headwater sync`` without ``-v``) would leave a run no INFO line."""
    global _CAPTURES, _LEVEL_BEFORE
    logger = logging.getLogger("headwater")
    with _CAPTURES_LOCK:
        if change > 0 and _CAPTURES == 0:
            _LEVEL_BEFORE = logger.level
            if logger.getEffectiveLevel() > logging.INFO:
                logger.setLevel(logging.INFO)
        _CAPTURES += change
        if change < 0 and _CAPTURES == 0 and _LEVEL_BEFORE is not None:
            logger.setLevel(_LEVEL_BEFORE)
            _LEVEL_BEFORE = None


def name_run_logs(run_id: str) -> None:
    """The capture of this thread's run (if any) belongs to ``run_id`` from now on."""
    capture = _RUN.get()
    if capture is not None:
        capture.belong_to(run_id)


@contextmanager
def capture_run_logs(store: MetadataStore, run_id: str | None = None, *,
                     every_s: float = 1.0) -> Iterator[RunLogCapture]:
    """Within the block, this thread runs one run: its log lines go to the store, under
    ``run_id`` (or the id :func:`name_run_logs` names later)."""
    handler = RunLogCapture(store, run_id)
    handler.setLevel(logging.INFO)
    _info_while_capturing(+1)
    token = _RUN.set(handler)
    root = logging.getLogger()
    root.addHandler(handler)
    done = threading.Event()

    def flush_now_and_then() -> None:
        while not done.wait(every_s):
            handler.flush()

    flusher = threading.Thread(target=flush_now_and_then, name="hw-run-logs", daemon=True)
    flusher.start()
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        _RUN.reset(token)
        _info_while_capturing(-1)
        done.set()
        flusher.join()
        handler.flush()


__all__ = ["KEEP_FIRST", "KEEP_LAST", "RunLogCapture", "capture_run_logs", "name_run_logs",
           "submit_in_run"]
