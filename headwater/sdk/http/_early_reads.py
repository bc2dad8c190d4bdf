"""An HTTP source's calls, made on the driver, starting while Spark starts.

A ``headwater sync`` spends seconds before its first task can call the API:
the JVM starts, then the first Spark job.  On a local master the driver and
the tasks share one machine, so the driver makes the run's calls from the
start, into the run's shared folder (:mod:`._shared_pages`), and the tasks
take their calls' pages from there: the tasks decode and write while the
driver keeps the source's ``concurrency`` calls in flight, as one client, for
the whole run.

It is a head start, never a different read:

* the calls are those of the plan the engine will make (the same streams,
  states and planning moment, ``PlanContext.planned_at``); a task uses a call's
  pages only if its own partition has that very call (same stream and window);
* the driver marks itself done once it has started every call it will make,
  or when it stops early (an error, :data:`SPOOL_LIMIT_BYTES` kept and not yet
  removed by the run's end); a call the driver never made is then made by
  the task that needs it, and a task never waits for a driver that died;
* with a call budget split per task (``rate_limit.budgets`` without Redis),
  nothing is read early: the tasks' shares assume they are alone;
* errors are the tasks' to report: a call that failed for the driver is not
  kept, and the task that needs it makes it again.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any

from headwater.sdk._plan_context import PlanContext
from headwater.sdk.http._client import HttpClient, HttpSettings
from headwater.sdk.http._shared_pages import DRIVER_DONE, DRIVER_MARK, kept_bytes

if TYPE_CHECKING:
    from headwater.sdk.http._stream import HttpStream

__all__ = ["EarlyReads"]

log = logging.getLogger(__name__)

#: How often the driver looks for a free slot (seconds).
POLL_S = 0.003
#: Pages the driver keeps ahead of the tasks at most; beyond, the tasks read the rest.
SPOOL_LIMIT_BYTES = 1 << 30


class EarlyReads:
    """The driver's early calls for ``streams`` (see the module docstring)."""

    def __init__(self, streams: Sequence[HttpStream], context: PlanContext,
                 settings: HttpSettings) -> None:
        assert context.shared_dir is not None
        self.streams = list(streams)
        self.context = context
        self.settings = settings
        self.folder = Path(context.shared_dir)
        self.calls_started = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hw-early-reads", daemon=True)

    @staticmethod
    def allowed(settings: HttpSettings) -> bool:
        """Whether early calls keep the API's limits: not with per-task budget shares."""
        return not settings.budgets or bool(settings.redis_url)

    def start(self) -> EarlyReads:
        (self.folder / DRIVER_MARK).write_text(str(os.getpid()))
        self._thread.start()
        return self

    def stop(self, timeout_s: float | None = None) -> None:
        """Start no further call; wait up to ``timeout_s`` for those under way."""
        self._stop.set()
        self._thread.join(timeout_s)

    def _calls(self) -> list[tuple[HttpStream, dict[str, Any]]]:
        """Each stream's shared calls in plan order, the streams taking turns (they
        are read side by side, each from its first checkpoint)."""
        queues = []
        states: Mapping[str, Any] = self.context.synced_states
        for stream in self.streams:
            units = [{**unit, "_early": True}
                     for partition in stream.plan(states.get(stream.name), self.context)
                     for unit in stream._units(partition) if unit.get("_shared")]
            queues.append([(stream, unit) for unit in units])
        turns: list[tuple[HttpStream, dict[str, Any]]] = []
        for at in range(max((len(q) for q in queues), default=0)):
            turns.extend(q[at] for q in queues if at < len(q))
        return turns

    def _halted(self) -> bool:
        return (self._stop.is_set() or not self.folder.is_dir()
                or kept_bytes(str(self.folder)) > SPOOL_LIMIT_BYTES)

    def _run(self) -> None:
        calls: list[tuple[HttpStream, dict[str, Any]]] = []
        try:
            calls = self._calls()
            self._read(calls)
        except Exception as exc:  # the tasks read what is left, and report errors
            log.debug("early reads stopped: %s", exc)
        finally:
            # Done: a task needing a call the driver did not make makes it itself.
            with contextlib.suppress(FileNotFoundError):
                (self.folder / DRIVER_DONE).touch()
        log.debug("early reads: %d of %d calls started by the driver", self.calls_started,
                  len(calls))

    def _read(self, calls: Sequence[tuple[HttpStream, dict[str, Any]]]) -> None:
        client = HttpClient(self.settings, tasks=1, name="early")
        started: list[Future[None]] = []
        try:
            for stream, unit in calls:
                while not self._halted() and not client.has_free_slot():
                    time.sleep(POLL_S)
                if self._halted():
                    break
                started.append(client.submit(_drain(stream._read_unit(client, unit))))
                self.calls_started += 1
                time.sleep(POLL_S)  # let it take its slot before looking again
            for future in started:
                try:
                    future.result()
                except Exception as exc:  # the task makes the call again
                    log.debug("an early call failed and is left to the tasks: %s", exc)
        finally:
            client.close()


async def _drain(pages: AsyncIterator[Any]) -> None:
    async for _ in pages:
        pass
