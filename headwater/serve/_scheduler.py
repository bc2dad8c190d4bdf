"""The scheduler behind ``headwater serve``.

Guarantees, per connection file of the folder (``*.yaml`` / ``*.yml``):

* **On schedule.** A file with ``schedule: "<cron>"`` runs when the cron
  expression fires (5 fields, or 6 with seconds first-class in croniter's
  sixth position); files without a schedule are ignored.
* **Never two at once.** A connection whose run is still going when it is due
  again is *skipped* for that firing (recorded as ``skipped``); the metadata
  store's lock also stops a run while another process (a manual ``headwater
  sync``) holds the connection: that too is a skip, not a failure.
* **Retries.** A failed run is retried after ``retry.backoff_s``, doubling
  each time up to ``retry.max_backoff_s``, at most ``retry.max_retries``
  times; then the connection waits for its next firing.  A run that
  succeeds resets the count.  A failure that repeats until a person acts is
  not retried (a config error; a schema change a ``freeze`` contract refuses,
  which would re-read the source each time to refuse it again): the event says
  so, and the next firing (or an edit of the file) tries again.
* **Catch-up policy (coalesce).** When the scheduler first sees a connection,
  it asks when its last run started (the metadata store).  If a firing was
  missed since then (the server was down), the connection runs once right
  away, however many firings were missed, then follows its schedule.  A
  connection that never ran waits for its next firing.
* **Edits without restart.** Every tick rescans the folder: a new file is
  scheduled, an edited one reloaded (a new schedule takes effect from now),
  a deleted one dropped (a run in progress finishes).  A file that does not
  load is reported once per edit and skipped.
* **Stops cleanly.** :meth:`Scheduler.run` returns when its ``stop`` event is
  set, after the runs in progress end: their commits and state land; no new
  run starts.  ``serve`` sets it on SIGTERM/SIGINT and also asks those runs to
  stop after their commits in flight (:class:`~headwater.serve.RunsInProgress`):
  they end ``stopped`` (an outcome, not a failure: no retry) and the next sync
  of each connection resumes its run.  A :class:`KeyboardInterrupt` in
  :meth:`Scheduler.run` (``serve``'s second Ctrl-C) does not wait for them.

Runs happen on a thread pool of this process (``max_parallel``); each run is
itself a Spark job, so the pool only bounds how many syncs share the
cluster at once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from croniter import croniter

from headwater._waiting import wait_all
from headwater.config import ConnectionConfig, load_connection, mask
from headwater.errors import ConfigError, ConnectionLockedError, SchemaContractError
from headwater.serve._clock import Clock, SystemClock

if TYPE_CHECKING:
    from headwater.metadata_store import MetadataStore

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunOutcome:
    """How one scheduled run ended: ``succeeded``, ``failed``, ``skipped`` (locked) or ``stopped``.

    ``stopped``: asked to stop (``serve`` is shutting down), the run ended after
    its commits in flight; it is not retried, the next sync resumes it.  A run
    that stopped because a commit's outcome could not be checked (the
    destination did not answer: :class:`~headwater.errors.CommitOutcomeUnknown`)
    is ``stopped`` too, with ``retry``: it is retried like a failure, and the
    retry resumes it and looks the commit up again, rather than leaving the
    connection's new data until the next firing.

    A firing that found an unfinished run finishes it, then runs a new one
    (``SyncEngine.sync``): ``run_id`` and ``status`` are then the new run's and
    ``resumed_run_id`` the finished one's (which succeeded, or there would be
    no new run).
    """

    status: str
    run_id: str | None = None
    error: str | None = None
    resumed_run_id: str | None = None
    #: Retry it as a failed run (see above).
    retry: bool = False
    #: A failure that repeats until a person acts (a config error, a frozen contract's
    #: schema change, exit codes 2 and 5): not retried.
    needs_a_person: bool = False


#: Runs one connection now and says how it went; raising counts as ``failed``.
Runner = Callable[[ConnectionConfig], RunOutcome]


@dataclass(frozen=True)
class ScheduleEvent:
    """Something the scheduler did, for the log and for tests.

    ``what`` is one of ``loaded``, ``invalid``, ``removed``, ``started``,
    ``succeeded``, ``failed``, ``skipped``, ``stopped``, ``retry`` (a retry is
    scheduled for ``at``), ``gave-up``, ``not-retried`` (a failure only a person can
    fix), ``catch-up``.
    """

    at: datetime
    connection: str
    what: str
    detail: str = ""


@dataclass(frozen=True)
class ScheduledFile:
    """One connection file as the scheduler holds it, for health figures and pages.

    ``problem`` says why the file did not load (masked; ``config`` then is
    ``None``); ``next_due`` is the next firing (``None``: no schedule, or the
    file did not load); ``retry_at`` a retry waiting; ``running`` whether a
    run of it is in progress in this process.
    """

    path: Path
    name: str
    config: ConnectionConfig | None
    problem: str | None
    next_due: datetime | None
    retry_at: datetime | None
    running: bool


@dataclass(frozen=True)
class SchedulerSnapshot:
    """What :meth:`Scheduler.snapshot` saw: every file, and when the loop last ticked."""

    last_tick_at: datetime | None
    files: tuple[ScheduledFile, ...]


@dataclass
class _Entry:
    path: Path
    signature: tuple[int, int]
    config: ConnectionConfig | None
    problem: str | None = None
    next_due: datetime | None = None
    retries: int = 0
    retry_at: datetime | None = None
    running: Future[RunOutcome] | None = None
    started_retry: bool = False
    name: str = ""


@dataclass
class Scheduler:
    """Runs every scheduled connection file of ``folder``; see the module docstring.

    ``runner`` does one run; ``last_started`` tells when a connection last
    started a run (``None``: never), for the catch-up policy; ``clock`` is the
    time source (tests pass a fast one); ``poll_s`` is how often it ticks.
    """

    folder: Path
    runner: Runner
    last_started: Callable[[ConnectionConfig], datetime | None] = lambda _config: None
    clock: Clock = field(default_factory=SystemClock)
    max_parallel: int = 4
    poll_s: float = 1.0
    on_event: Callable[[ScheduleEvent], None] | None = None
    #: Called at the end of every tick with its time and a snapshot (``serve``'s
    #: :class:`~headwater.serve.HealthWatch`); it must return quickly.
    on_tick: Callable[[datetime, SchedulerSnapshot], None] | None = None
    events: list[ScheduleEvent] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._entries: dict[Path, _Entry] = {}
        self._pool = ThreadPoolExecutor(max_workers=self.max_parallel,
                                        thread_name_prefix="hw-serve")
        self._lock = threading.Lock()  # guards ``events`` (appended from run threads too)
        #: Every run submitted, also those of files removed since (shutdown waits for them).
        self._submitted: set[Future[RunOutcome]] = set()
        self._last_tick_at: datetime | None = None

    # ------------------------------------------------------------------ the loop

    def run(self, stop: threading.Event) -> None:
        """Tick until ``stop`` is set, then wait for the runs in progress.

        A :class:`KeyboardInterrupt` (an abort) starts nothing new either but
        returns at once, raising it: waiting for the runs is what an abort is for
        not doing.  Other errors still wait, so no run is cut short by a bug here.
        """
        try:
            while not stop.is_set():
                self.tick()
                self.clock.sleep(self.poll_s, stop)
        except KeyboardInterrupt:
            self._pool.shutdown(wait=False, cancel_futures=True)
            raise
        except BaseException:
            self.shutdown()
            raise
        self.shutdown()

    def shutdown(self) -> None:
        """Start nothing new; return once every run in progress has ended.

        Waits in short timed steps, never in one untimed join: a signal that the
        kernel hands to a run thread only runs its Python handler once the main
        thread wakes, and a second Ctrl-C must be able to abort this wait.
        """
        self._pool.shutdown(wait=False)
        wait_all(self._submitted)
        self._pool.shutdown(wait=True)  # the threads are idle now: this is quick
        self._collect(self.clock.now())

    def tick(self) -> None:
        """One pass: reload files, note finished runs, start what is due."""
        now = self.clock.now()
        self._scan(now)
        self._collect(now)
        for entry in list(self._entries.values()):
            if entry.config is None or entry.config.schedule is None:
                continue
            self._maybe_start(entry, now)
        self._last_tick_at = now
        if self.on_tick is not None:
            self.on_tick(now, self.snapshot())

    def snapshot(self) -> SchedulerSnapshot:
        """The files and their next firings now; safe to call from any thread.

        Read while the loop may be changing them: each file's figures are one
        entry's, taken whole (``tuple`` copies the dict in one step under the
        GIL), but two files may be seen a tick apart.
        """
        entries = tuple(self._entries.values())
        return SchedulerSnapshot(
            last_tick_at=self._last_tick_at,
            files=tuple(ScheduledFile(path=e.path, name=e.name, config=e.config,
                                      problem=e.problem, next_due=e.next_due,
                                      retry_at=e.retry_at,
                                      running=e.running is not None and not e.running.done())
                        for e in sorted(entries, key=lambda e: e.path)))

    # ------------------------------------------------------------------ files

    def _scan(self, now: datetime) -> None:
        found = scan_folder(self.folder)
        for path in list(self._entries):
            if path not in found:
                entry = self._entries.pop(path)
                self._event(now, entry.name or path.stem, "removed", str(path))
        for path, signature in sorted(found.items()):
            known = self._entries.get(path)
            if known is not None and known.signature == signature:
                continue
            self._load(path, signature, known, now)

    def _load(self, path: Path, signature: tuple[int, int], old: _Entry | None,
              now: datetime) -> None:
        try:
            config = load_connection(path)
        except Exception as exc:
            entry = _Entry(path=path, signature=signature, config=None, name=path.stem,
                           problem=mask(str(exc)))
            if old is not None:
                entry.running = old.running
            self._entries[path] = entry
            self._event(now, path.stem, "invalid", entry.problem or "")
            return
        entry = _Entry(path=path, signature=signature, config=config, name=config.name)
        if old is not None:
            entry.running = old.running  # an edit never starts a second run beside it
        if config.schedule is not None:
            entry.next_due = self._first_due(config, now, edited=old is not None)
        self._entries[path] = entry
        self._event(now, config.name, "loaded",
                    f"schedule {config.schedule!r}, next {entry.next_due}"
                    if config.schedule else "no schedule: not run by serve")

    def _first_due(self, config: ConnectionConfig, now: datetime, *, edited: bool) -> datetime:
        assert config.schedule is not None
        upcoming = next_firing(config.schedule, now)
        if edited:
            return upcoming
        last = self.last_started(config)
        if last is not None and next_firing(config.schedule, last) <= now:
            self._event(now, config.name, "catch-up",
                        f"a firing was missed since the last run at {last.isoformat()}")
            return now
        return upcoming

    # ------------------------------------------------------------------ runs

    def _maybe_start(self, entry: _Entry, now: datetime) -> None:
        assert entry.config is not None and entry.config.schedule is not None
        fired = entry.next_due is not None and now >= entry.next_due
        retry_due = entry.retry_at is not None and now >= entry.retry_at
        if not fired and not retry_due:
            return
        if fired:
            entry.next_due = next_firing(entry.config.schedule, now)
        if entry.running is not None:
            if fired:
                self._event(now, entry.name, "skipped", "the previous run is still going")
            return
        if fired:
            entry.retries = 0  # a new firing starts a fresh run, not a retry
        entry.started_retry = retry_due and not fired
        entry.retry_at = None
        self._event(now, entry.name, "started",
                    f"retry {entry.retries}" if entry.started_retry else "")
        entry.running = self._pool.submit(self._run_one, entry.config)
        self._submitted = {f for f in self._submitted if not f.done()} | {entry.running}

    def _run_one(self, config: ConnectionConfig) -> RunOutcome:
        try:
            return self.runner(config)
        except ConnectionLockedError as exc:
            return RunOutcome("skipped", error=mask(str(exc)))
        except (ConfigError, SchemaContractError) as exc:
            return RunOutcome("failed", error=mask(f"{type(exc).__name__}: {exc}"),
                              needs_a_person=True)
        except Exception as exc:
            log.debug("scheduled run of %s failed", config.name, exc_info=True)
            return RunOutcome("failed", error=mask(f"{type(exc).__name__}: {exc}"))

    def _collect(self, now: datetime) -> None:
        for entry in list(self._entries.values()):
            future = entry.running
            if future is None or not future.done():
                continue
            entry.running = None
            outcome = future.result()
            resumed = f"resumed {outcome.resumed_run_id}, then" if outcome.resumed_run_id else ""
            detail = " ".join(x for x in (resumed, outcome.run_id or "", outcome.error or "") if x)
            # A stop the scheduler retries (a commit's outcome unknown) warns as a failure does.
            self._event(now, entry.name, outcome.status, detail, warn=outcome.retry)
            if outcome.status == "failed" and outcome.needs_a_person:
                self._event(now, entry.name, "not-retried",
                            "a person must act (the file, or the contract); the next firing "
                            "tries again")
                entry.retries = 0
            elif outcome.status == "failed" or outcome.retry:
                self._schedule_retry(entry, now)
            elif outcome.status in ("succeeded", "warned"):  # a warned run is not retried
                entry.retries = 0

    def _schedule_retry(self, entry: _Entry, now: datetime) -> None:
        if entry.config is None:
            return
        policy = entry.config.retry
        if entry.retries >= policy.max_retries:
            self._event(now, entry.name, "gave-up",
                        f"{entry.retries} retries failed; waiting for the next firing")
            entry.retries = 0
            return
        entry.retries += 1
        wait = min(policy.backoff_s * 2 ** (entry.retries - 1), policy.max_backoff_s)
        entry.retry_at = now + timedelta(seconds=wait)
        self._event(now, entry.name, "retry",
                    f"retry {entry.retries} of {policy.max_retries} at {entry.retry_at}")

    def _event(self, at: datetime, connection: str, what: str, detail: str = "", *,
               warn: bool = False) -> None:
        event = ScheduleEvent(at=at, connection=connection, what=what, detail=detail)
        with self._lock:
            self.events.append(event)
        level = (logging.WARNING if warn or what in ("failed", "invalid", "gave-up", "not-retried")
                 else logging.INFO)
        log.log(level, "%s %s %s", connection, what, detail)
        if self.on_event is not None:
            self.on_event(event)


def scan_folder(folder: Path) -> dict[Path, tuple[int, int]]:
    """The connection files of ``folder`` (``*.yaml``, ``*.yml``, not its subfolders), each
    with its (modification time, size): a file is read again only when these change."""
    found: dict[Path, tuple[int, int]] = {}
    for pattern in ("*.yaml", "*.yml"):
        for path in folder.glob(pattern):
            try:
                stat = path.stat()
            except OSError:
                continue
            found[path] = (stat.st_mtime_ns, stat.st_size)
    return found


def next_firing(schedule: str, after: datetime) -> datetime:
    """When cron expression ``schedule`` fires next after ``after`` (as ``serve`` runs it)."""
    fire: datetime = croniter(schedule, after).get_next(datetime)
    return fire


def last_run_started(store: MetadataStore, connection: str) -> datetime | None:
    """When ``connection`` last started a run, from the metadata store (``None``: never)."""
    runs = store.list_runs(connection, limit=1)
    return runs[0].started_at if runs else None


__all__ = ["RunOutcome", "Runner", "ScheduleEvent", "ScheduledFile", "Scheduler",
           "SchedulerSnapshot", "last_run_started", "next_firing", "scan_folder"]
