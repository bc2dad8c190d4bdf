"""An HTTP source's calls, made from the driver's side, starting while Spark starts.

A ``headwater sync`` spends seconds before its first task can call the API:
the JVM starts, then the first Spark job.  On a local master the driver and
the tasks share one machine, so the driver has the run's calls made from the
start, into the run's shared folder (:mod:`._shared_pages`), and the tasks
take their calls' pages from there: the tasks decode and write while the
reader keeps the source's ``concurrency`` calls in flight, as one client, for
the whole run.

The reader is a process of its own, forked from the driver in
``Source.prepare`` (:mod:`._reader_process`): the calls' event loop never
waits for the driver's GIL while the driver imports PySpark, starts Spark and
plans.  Where a fork is not safe (not Linux, or other threads already run in
the driver: a program that syncs from a thread of its own) the reader is a
thread of the driver, as it was before.

It is a head start, never a different read:

* the calls are those of the plan the engine will make (the same streams,
  states and planning moment, ``PlanContext.planned_at``); a task uses a call's
  pages only if its own partition has that very call (same stream and window);
* the folder names the reader's process (:data:`DRIVER_MARK`); the reader
  marks the folder done once every call it started has ended, or when it stops
  early (an error, :data:`SPOOL_LIMIT_BYTES` kept and not yet removed by the
  run's end, the driver's :meth:`EarlyReads.stop`), and the driver marks it
  again once the reader's process has ended however it ended (killed): a call
  the reader never made is then made by the task that needs it, and a task
  never waits for a reader that died (it checks the marked process is alive);
* the reader leaves at once when the driver is gone or the run's folder was
  removed (the plan did not take the early reads up, or the run ended);
* with a call budget split per task (``rate_limit.budgets`` without Redis),
  nothing is read early: the tasks' shares assume they are alone;
* errors are the tasks' to report: a call that failed for the reader is not
  kept, and the task that needs it makes it again.  The reader's log records
  go through the driver's handlers, secrets masked as the driver's are.

In a thread of the driver (the fallback), the interpreter hands the GIL
between threads every :data:`SWITCH_INTERVAL_S` instead of every 5 ms
(:func:`sys.setswitchinterval`) while the calls run: the driver's main thread
meanwhile imports PySpark and starts Spark, pure Python for seconds, and each
answer the event loop's thread had to handle waited up to a whole interval for
the GIL.  With a busy main thread the loop made about twice the calls in its
first 4 s at 0.5 ms (1,482-1,893 against 723-1,334, four pairs back to back on
a loaded machine) for no more CPU.  The reader's own process is left at the
default: besides the loop's thread it has only its main thread, waiting for
the loop, and a watcher that wakes every 50 ms, each holding the GIL for
microseconds (reasoned, not measured); the driver keeps its default too.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from headwater._events import emit
from headwater.sdk._plan_context import PlanContext
from headwater.sdk.http._client import HttpClient, HttpSettings
from headwater.sdk.http._reader_process import ReaderProcess, fork_refused
from headwater.sdk.http._shared_pages import DRIVER_DONE, DRIVER_MARK, kept_bytes

if TYPE_CHECKING:
    from headwater.sdk.http._stream import HttpStream

__all__ = ["EarlyReads"]

log = logging.getLogger(__name__)

#: How often the driver looks whether the queue needs another call (seconds).
POLL_S = 0.003
#: Calls under way at most per request in flight (see ``EarlyReads._feed``).
OPEN_PER_SLOT = 2
#: Pages the driver keeps ahead of the tasks at most; beyond, the tasks read the rest.
SPOOL_LIMIT_BYTES = 1 << 30
#: The interpreter's switch interval while early calls run (seconds; module docstring).
SWITCH_INTERVAL_S = 0.0005


class _QuickSwitches:
    """Lowers the interpreter's switch interval while at least one early read runs,
    and puts the value it found back when the last one ends."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._holders = 0
        self._found = 0.0

    def __enter__(self) -> None:
        with self._lock:
            if self._holders == 0:
                self._found = sys.getswitchinterval()
                sys.setswitchinterval(min(self._found, SWITCH_INTERVAL_S))
            self._holders += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._holders -= 1
            if self._holders == 0:
                sys.setswitchinterval(self._found)


_quick_switches = _QuickSwitches()


class EarlyReads:
    """The driver's early calls for ``streams`` (see the module docstring).

    ``own_process``: make them in a forked process of their own
    (:mod:`._reader_process`); None (the default) where a fork is safe, else in
    a thread of the driver.  True forks even beside other threads (tests).
    """

    def __init__(self, streams: Sequence[HttpStream], context: PlanContext,
                 settings: HttpSettings, *, own_process: bool | None = None) -> None:
        assert context.shared_dir is not None
        self.streams = list(streams)
        self.context = context
        self.settings = settings
        self.folder = Path(context.shared_dir)
        #: Calls started, once they have all ended (from the reader's process if forked).
        self.calls_started = 0
        self._stop = threading.Event()
        refused = fork_refused() if own_process is None else (
            None if own_process else "asked for a thread")
        if refused is not None:
            log.debug("early reads in a thread of the driver: %s", refused)
        #: The reads' own process, or None: they run in :attr:`_thread`.
        self.process = None if refused is not None else ReaderProcess(
            self._read_all, self.folder, self._ended)
        self._thread = threading.Thread(target=self._in_thread, name="hw-early-reads",
                                        daemon=True)

    @staticmethod
    def allowed(settings: HttpSettings) -> bool:
        """Whether early calls keep the API's limits: not with per-task budget shares."""
        return not settings.budgets or bool(settings.redis_url)

    def start(self) -> EarlyReads:
        """Start the calls.  The folder names the process that makes them
        (:data:`DRIVER_MARK`): the tasks wait for its calls while it lives."""
        if self.process is not None:
            (self.folder / DRIVER_MARK).write_text(str(self.process.start()))
        else:
            (self.folder / DRIVER_MARK).write_text(str(os.getpid()))
            self._thread.start()
        emit("early-reads-started")
        return self

    def stop(self, timeout_s: float | None = None) -> None:
        """Start no further call; wait up to ``timeout_s`` for those under way."""
        if self.process is not None:
            self.process.stop()
            self.process.join(timeout_s)
            return
        self._stop.set()
        self._thread.join(timeout_s)

    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait up to ``timeout_s`` for every call to end, without stopping any;
        whether they have (and a reader process has been reaped)."""
        if self.process is not None:
            return self.process.join(timeout_s)
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def _calls(self) -> list[tuple[HttpStream, dict[str, Any]]]:
        """Each stream's shared calls in plan order, the streams taking turns (they
        are read side by side, each from its first checkpoint).

        A substream's call reads its parent's window itself (keeping the pages
        for the parent's tasks) and starts each parent record's child calls as
        that record's page arrives; the parent's own call for the same window is
        then left out, or the children would wait for it to end.
        """
        queues = []
        states: Mapping[str, Any] = self.context.synced_states
        for stream in self.streams:
            units = [{**unit, "_early": True}
                     for partition in stream.plan(states.get(stream.name), self.context)
                     for unit in stream._units(partition) if unit.get("_shared")]
            queues.append([(stream, unit) for unit in units])
        read_by_children = {_window(stream.parent.name, unit["parent_unit"])
                            for queue in queues for stream, unit in queue
                            if "parent_unit" in unit and stream.parent is not None}
        queues = [[(stream, unit) for stream, unit in queue
                   if _window(stream.name, unit) not in read_by_children] for queue in queues]
        turns: list[tuple[HttpStream, dict[str, Any]]] = []
        for at in range(max((len(q) for q in queues), default=0)):
            turns.extend(q[at] for q in queues if at < len(q))
        return turns

    def _halted(self, stop: threading.Event) -> bool:
        return (stop.is_set() or not self.folder.is_dir()
                or kept_bytes(str(self.folder)) > SPOOL_LIMIT_BYTES)

    def _in_thread(self) -> None:
        started = None
        try:
            with _quick_switches:
                started = self._read_all(self._stop)
        finally:
            self._ended(started)

    def _read_all(self, stop: threading.Event) -> int:
        """Make the calls until every one has ended or ``stop`` is set (in the thread
        or the reader's process); then mark the folder done.  Calls started."""
        calls: list[tuple[HttpStream, dict[str, Any]]] = []
        self.calls_started = 0
        try:
            calls = self._calls()
            self._read(calls, stop)
        except Exception as exc:  # the tasks read what is left, and report errors
            log.debug("early reads stopped: %s", exc)
        finally:
            # Done: a task needing a call the reader did not make makes it itself.
            _mark_done(self.folder)
        log.debug("early reads: %d of %d calls started", self.calls_started, len(calls))
        return self.calls_started

    def _ended(self, started: int | None) -> None:
        """In the driver, once the reads have ended however they ended (``started``:
        None if the reader's process said nothing: it was killed, or left)."""
        _mark_done(self.folder)  # a reader killed before it could
        if started is not None:
            self.calls_started = started
        emit("early-reads-done")

    def _read(self, calls: Sequence[tuple[HttpStream, dict[str, Any]]],
              stop: threading.Event) -> None:
        client = HttpClient(self.settings, tasks=1, name="early")
        try:
            client.submit(self._feed(client, calls, stop)).result()
        finally:
            client.close()

    async def _feed(self, client: HttpClient,
                    calls: Sequence[tuple[HttpStream, dict[str, Any]]],
                    stop: threading.Event) -> None:
        """Start ``calls`` on the client's loop, each once the queue needs it.

        A call is started while fewer than a round of requests (``concurrency``)
        that are not child calls wait for a slot, and while fewer than
        :data:`OPEN_PER_SLOT` calls per slot are under way (each may start many
        child calls: the bound keeps what waits in memory in proportion to
        ``concurrency``, not to the run).  Child calls waiting do not hold the
        next call back: its parent pages go before them (:mod:`._slots`), so
        every open window's children are queued early.
        """
        open_at_most = OPEN_PER_SLOT * client.concurrency
        under_way: set[asyncio.Future[None]] = set()
        started: list[asyncio.Future[None]] = []
        for stream, unit in calls:
            while not self._halted(stop) and (client.waiting() >= client.concurrency
                                          or len(under_way) >= open_at_most):
                await asyncio.sleep(POLL_S)
            if self._halted(stop):
                break
            call = asyncio.ensure_future(_drain(stream._read_unit(client, unit)))
            under_way.add(call)
            call.add_done_callback(under_way.discard)
            started.append(call)
            self.calls_started += 1
            await asyncio.sleep(0)  # let it ask for its slot before looking again
        for outcome in await asyncio.gather(*started, return_exceptions=True):
            if isinstance(outcome, Exception):  # the task makes the call again
                log.debug("an early call failed and is left to the tasks: %s", outcome)


def _mark_done(folder: Path) -> None:
    with contextlib.suppress(FileNotFoundError):  # the folder went with the run
        (folder / DRIVER_DONE).touch()


def _window(stream: str, unit: Mapping[str, Any]) -> tuple[str, Any, Any]:
    """Which shared call ``unit`` of ``stream`` is (its stream and window)."""
    return stream, unit.get("start"), unit.get("end")


async def _drain(pages: AsyncIterator[Any]) -> None:
    async for _ in pages:
        pass
