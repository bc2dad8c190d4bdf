"""Sending events without ever holding up or failing a sync.

A receiver that is down, answers 500, or accepts the connection and never
answers must cost a sync a bounded, small time and one warning per run, never
its result.  So each event goes to one background thread (events keep their
order) and the sync waits for it at most ``timeout_s``; the thread is a daemon,
so a receiver that hangs past that cannot keep the process from exiting
either.  The HTTP client's own timeout and retries are set inside the same
bound (one retry, on 5xx and failed connections).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from headwater.config import mask

log = logging.getLogger("headwater.lineage")

#: The HTTP transport's retries: one more try on 5xx or a failed connection, soon.
HTTP_RETRY = {"total": 1, "connect": 1, "read": 1, "backoff_factor": 0.1,
              "status_forcelist": [500, 502, 503, 504], "allowed_methods": ["POST"]}


@dataclass
class _Job:
    event: Any
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None


class LineageEmitter:
    """Sends events through an OpenLineage client made on first use, each within ``timeout_s``.

    ``make_client`` builds the client (``OpenLineageClient``); ``where`` names
    the receiver in warnings (no credentials in it).
    """

    def __init__(self, make_client: Callable[[], Any], *, where: str, timeout_s: float) -> None:
        self._make_client = make_client
        self.where = where
        self.timeout_s = timeout_s
        self._queue: queue.Queue[_Job] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._client: Any = None
        #: Runs already warned about: one warning per run, whatever goes wrong after.
        self._warned: set[str] = set()

    def send(self, event: Any, *, run_id: str, what: str) -> bool:
        """Send ``event`` (``what``: ``START``...) of run ``run_id``; whether it was accepted.

        Never raises: a failure or a timeout is logged once per run, as a warning.
        """
        job = _Job(event)
        self._start_thread()
        self._queue.put(job)
        if not job.done.wait(self.timeout_s):
            self.warn(run_id, f"the {what} event was not accepted within {self.timeout_s:g} s")
            return False
        if job.error is not None:
            self.warn(run_id, f"the {what} event was refused: "
                               f"{type(job.error).__name__}: {job.error}")
            return False
        return True

    def _start_thread(self) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="hw-lineage",
                                                daemon=True)
                self._thread.start()

    def _serve(self) -> None:
        while True:
            job = self._queue.get()
            try:
                if self._client is None:
                    self._client = self._make_client()
                self._client.emit(job.event)
            except Exception as exc:  # any failure of the receiver or the client is a value
                job.error = exc
            finally:
                job.done.set()

    def warn(self, run_id: str, problem: str) -> None:
        """Log ``problem`` of run ``run_id``, unless that run has had its warning."""
        with self._lock:
            if run_id in self._warned:
                return
            self._warned.add(run_id)
        log.warning("lineage: %s (receiver %s); run %s goes on, and no further lineage "
                    "warning is logged for it", mask(problem), self.where, run_id)


__all__ = ["HTTP_RETRY", "LineageEmitter"]
