"""What the page's buttons do: each is the CLI command's code, on a background thread.

* **sync now**: :func:`headwater.operations.run_sync`, exactly what ``serve``
  and ``headwater sync`` run (an unfinished run is finished first).
* **replay** / **backfill**: :func:`headwater.engine._rerun.replay` /
  ``backfill``, as ``headwater replay`` / ``backfill`` run them; the backfill
  plan is :func:`~headwater.engine._rerun.backfill_partitions`, the partitions
  the backfill would read, shown before it runs.
* **stop**: a run of this process is asked to stop as Ctrl-C asks
  (:meth:`~headwater.engine.SyncEngine.request_stop`: it ends after its commits
  in flight, ``stopped``, and the next sync resumes it).  A run of another
  process cannot be stopped from here (the CLI has no cross-process stop): 409.
* **reset**: :meth:`~headwater.metadata_store.MetadataStore.reset_state`, what
  ``headwater state reset --stream S`` does, once the request confirms it.

One job per connection at a time in this process (409 for a second); a
connection whose lock another process holds is refused the same way.  Every
engine the jobs run is registered in the process's
:class:`~headwater.serve.RunsInProgress`, so SIGTERM stops them with ``serve``'s
runs.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from headwater.config import ConnectionConfig, mask
from headwater.errors import ConfigError, ConnectionLockedError, HeadwaterError
from headwater.operations import (
    open_store_to_change,
    run_sync,
    shared_session_settings,
    start_engine,
    store_url,
)
from headwater.serve import RunsInProgress
from headwater.ui._folder import ConnectionFile, ConnectionFolder

if TYPE_CHECKING:
    from headwater.engine import SyncEngine
    from headwater.metadata_store import MetadataStore, RunRecord
    from headwater.plan import RunPlan

log = logging.getLogger(__name__)

#: A lock whose holder has not beaten for this long is stale (the engine takes it over).
STALE_LOCK_S = 600


class ActionError(HeadwaterError):
    """An action refused, with the HTTP status that says why (400, 404, 409)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass
class Job:
    """One background action of a connection: its thread, engine and the runs it ran."""

    connection: str
    kind: str
    engine: SyncEngine | None = None
    run_ids: list[str] = field(default_factory=list)
    run_started: threading.Event = field(default_factory=threading.Event)
    ended: threading.Event = field(default_factory=threading.Event)
    failure: BaseException | None = None
    thread: threading.Thread | None = None


def _watch_runs(engine: SyncEngine, job: Job) -> None:
    """Make ``job`` learn each run id ``engine`` starts (the page answers with it)."""
    from headwater.engine import SyncObserver

    inner = engine.observer

    class Observer(SyncObserver):
        def run_started(self, run_id: str, plan: RunPlan, resumed: bool) -> None:
            job.run_ids.append(run_id)
            job.run_started.set()
            inner.run_started(run_id, plan, resumed)

        def stream_resumed(self, stream: str, partitions: int, rows: int) -> None:
            inner.stream_resumed(stream, partitions, rows)

        def checkpoint_started(self, stream: str, index: int) -> None:
            inner.checkpoint_started(stream, index)

        def checkpoint_committed(self, stream: str, partitions: int, result: Any) -> None:
            inner.checkpoint_committed(stream, partitions, result)

        def stream_finished(self, stats: Any) -> None:
            inner.stream_finished(stats)

    engine.observer = Observer()
    job.engine = engine


class Actions:
    """The page's actions over ``folder``'s connections; thread-safe."""

    def __init__(self, folder: ConnectionFolder, runs: RunsInProgress, *,
                 wait_for_run_s: float = 5.0) -> None:
        self.folder = folder
        self.runs = runs
        self.wait_for_run_s = wait_for_run_s
        self._lock = threading.Lock()  # guards ``_jobs``: requests come on several threads
        self._jobs: dict[str, Job] = {}

    # ---------------------------------------------------------------- lookups

    def connection(self, name: str) -> tuple[ConnectionFile, ConnectionConfig]:
        """The connection named ``name`` and its config; 404 / 400 if none or invalid."""
        found = self.folder.get(name)
        if found is None:
            raise ActionError(404, f"no connection {name!r} in {self.folder.folder}")
        if found.config is None or not found.valid:
            raise ActionError(400, f"connection {name!r} does not validate: "
                                   + "; ".join(found.problems))
        return found, found.config

    def find_run(self, run_id: str) -> tuple[RunRecord, MetadataStore]:
        for store in self.folder.all_stores():
            if store.missing:  # no sync wrote it yet: it holds no run
                continue
            run = store.get_run(run_id)
            if run is not None:
                return run, store
        raise ActionError(404, f"no run {run_id!r} in the metadata store")

    def job_of(self, name: str) -> Job | None:
        with self._lock:
            job = self._jobs.get(name)
            return job if job is not None and not job.ended.is_set() else None

    def running_jobs(self) -> list[Job]:
        with self._lock:
            return [j for j in self._jobs.values() if not j.ended.is_set()]

    # ---------------------------------------------------------------- jobs

    def _start(self, connection: ConnectionFile, kind: str,
               work: Callable[[Job], None]) -> dict[str, Any]:
        """Run ``work`` on a thread as the connection's one job; wait a little for its run id."""
        name = connection.name
        if self.runs.stop_reason is not None:
            raise ActionError(409, f"this server is stopping ({self.runs.stop_reason})")
        self._refuse_if_busy(name)  # first: this process's own job says more than its lock
        self._refuse_if_locked(connection)
        job = Job(connection=name, kind=kind)
        with self._lock:
            self._refuse_if_busy(name, locked=True)
            self._jobs[name] = job

        def body() -> None:
            try:
                work(job)
            except BaseException as exc:
                job.failure = exc
                log.warning("%s of %s from the web page failed: %s", kind, name,
                            mask(str(exc)))
            finally:
                job.ended.set()
                job.run_started.set()

        job.thread = threading.Thread(target=body, name=f"hw-ui-{kind}-{name}")
        job.thread.start()
        job.run_started.wait(self.wait_for_run_s)
        if job.ended.is_set() and not job.run_ids and job.failure is not None:
            raise _as_action_error(job.failure)
        return {"run_id": job.run_ids[0] if job.run_ids else None, "started": True,
                "connection": name, "kind": kind}

    def _refuse_if_busy(self, name: str, *, locked: bool = False) -> None:
        """409 if this process runs a job of ``name`` (``locked``: the caller holds ``_lock``)."""
        if not locked:
            with self._lock:
                return self._refuse_if_busy(name, locked=True)
        current = self._jobs.get(name)
        if current is not None and not current.ended.is_set():
            raise ActionError(409, f"connection {name} is already running a "
                                   f"{current.kind} here; wait for it or stop it")

    def _refuse_if_locked(self, connection: ConnectionFile) -> None:
        store = self.folder.store_for(connection)
        if store.missing:  # no sync wrote it yet: nobody holds a lock there
            return
        holder = store.lock_holder(connection.name)
        if holder is None:
            return
        if datetime.now(UTC) - holder.heartbeat_at < timedelta(seconds=STALE_LOCK_S):
            raise ActionError(409, f"connection {connection.name} is being synced by process "
                                   f"{holder.pid} on {holder.host} (run {holder.run_id}); "
                                   "wait for it to end")

    def _refuse_if_unfinished(self, connection: ConnectionFile, kind: str) -> None:
        """409 before anything starts when the connection has a run to finish first (a
        stopped or killed one): ``headwater replay`` / ``backfill`` refuse it too, but only
        on the job's thread, after the page was told the job started."""
        self._refuse_if_busy(connection.name)  # this process's own job, or another
        self._refuse_if_locked(connection)  # process's sync, says more
        store = self.folder.store_for(connection)
        unfinished = None if store.missing else store.find_unfinished_run(connection.name)
        if unfinished is not None:
            how = "stopped" if unfinished.status == "stopped" else "unfinished"
            raise ActionError(409, f"connection {connection.name} has a {how} run "
                                   f"{unfinished.run_id} (a {unfinished.kind}): a {kind} "
                                   "waits until a sync finishes it (Sync now resumes it)")

    def _engine(self, job: Job, config: ConnectionConfig,
                kind: str) -> tuple[SyncEngine, MetadataStore]:
        """An engine as ``headwater replay``/``backfill`` build one, watched by ``job``."""
        store = open_store_to_change(store_url(config, explicit=self.folder.explicit_store,
                                               create=False), kind)
        engine = start_engine(config, store, early_reads=False,
                              spark=shared_session_settings(config))
        _watch_runs(engine, job)
        return engine, store

    # ---------------------------------------------------------------- actions

    def sync(self, name: str) -> dict[str, Any]:
        """``headwater sync`` of the connection, on a background thread."""
        connection, config = self.connection(name)
        if self.folder.explicit_store:
            config = config.model_copy(update={"metadata_store": self.folder.explicit_store})

        def work(job: Job) -> None:
            outcome = run_sync(config, self.runs, on_engine=lambda e: _watch_runs(e, job))
            if outcome.status == "failed" and not job.run_ids:
                raise HeadwaterError(outcome.error or "the sync failed")

        return self._start(connection, "sync", work)

    def replay(self, run_id: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """``headwater replay RUN_ID [--stream S]`` of a run of a connection of the folder."""
        from headwater.engine._rerun import replay

        run, _ = self.find_run(run_id)
        connection, config = self.connection(run.connection)
        streams = _string_list(body.get("streams"), "streams")
        self._refuse_if_unfinished(connection, "replay")

        def work(job: Job) -> None:
            engine, store = self._engine(job, config, "replay")
            try:
                with self.runs.running(engine):
                    replay(engine, run_id, streams or None)
            finally:
                store.close()

        return self._start(connection, "replay", work)

    def backfill_plan(self, name: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """The partitions a backfill of ``body``'s window would read (nothing runs)."""
        from headwater.engine import SyncEngine
        from headwater.engine._rerun import backfill_partitions

        connection, config = self.connection(name)
        stream, start, end = _window(body)
        store = self.folder.store_for(connection)
        engine = SyncEngine(config, store)
        try:
            chosen, partitions = backfill_partitions(engine, stream, start, end)
        except ConfigError as exc:
            raise ActionError(400, mask(exc.message)) from exc
        return {"connection": name, "kind": "backfill", "streams": [{
            "name": chosen.name, "sync_mode": chosen.mode_label,
            "table": engine.destination.table_location(chosen.name),
            "from": start, "to": end, "partitions": len(partitions),
            "partition_list": [{"id": p.id, "params": dict(p.params)} for p in partitions],
        }], "moves_state": False}

    def backfill(self, name: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """``headwater backfill --stream S --from X --to Y``, once the plan holds."""
        from headwater.engine._rerun import backfill

        self.backfill_plan(name, body)  # refuses what the command would refuse, before 202
        connection, config = self.connection(name)
        if self.folder.store_for(connection).missing:  # a backfill starts no store
            raise ActionError(409, f"connection {name} has no metadata store yet: a backfill "
                                   "reads again what a sync has read (Sync now first)")
        self._refuse_if_unfinished(connection, "backfill")
        stream, start, end = _window(body)

        def work(job: Job) -> None:
            engine, store = self._engine(job, config, "backfill")
            try:
                with self.runs.running(engine):
                    backfill(engine, stream, start, end)
            finally:
                store.close()

        return self._start(connection, "backfill", work)

    def stop(self, run_id: str) -> dict[str, Any]:
        """Ask a run of this process to stop after its commits in flight."""
        with self._lock:
            job = next((j for j in self._jobs.values()
                        if run_id in j.run_ids and not j.ended.is_set()), None)
        if job is not None and job.engine is not None:
            job.engine.request_stop("stopped from the web page")
            return {"run_id": run_id, "stopping": True}
        run, _ = self.find_run(run_id)
        if run.status != "running":
            raise ActionError(409, f"run {run_id} is not running (it is {run.status})")
        attempt = run.attempts[-1] if run.attempts else None
        where = f"process {attempt.pid} on {attempt.host}" if attempt else "another process"
        raise ActionError(409, f"run {run_id} runs in {where}, not in this server: stop it "
                               "there (Ctrl-C, or SIGTERM to that process); the next sync "
                               "resumes it")

    def reset(self, name: str, stream: str, body: Mapping[str, Any]) -> dict[str, Any]:
        """``headwater state reset --stream S``, once ``body`` confirms with the stream's name."""
        from headwater.ui._streams import known_streams

        connection, _ = self.connection(name)
        store = self.folder.store_for(connection)
        known = known_streams(connection, store)
        if known is not None and stream not in known:
            raise ActionError(404, f"connection {name} has no stream {stream!r} (its streams: "
                                   f"{', '.join(sorted(known))})")
        before = None if store.missing else store.get_state(name, stream)
        if body.get("confirm") != stream:
            what = ("it has no state now, so nothing changes" if before is None else
                    "its stored state is forgotten: the next sync reads the stream from "
                    "the start (a full read), and rows already in its table stay there")
            raise ActionError(400, f"resetting stream {stream} of {name}: {what}. Send "
                                   f'{{"confirm": "{stream}"}} to reset it')
        if self.job_of(name) is not None:
            raise ActionError(409, f"connection {name} is running a job here; reset it "
                                   "once that ends")
        self._refuse_if_locked(connection)
        reset = [] if store.missing else store.reset_state(name, [stream])
        return {"connection": name, "reset": reset, "before": before}

    # ---------------------------------------------------------------- shutdown

    def shutdown(self, reason: str) -> None:
        """Ask every job's run to stop after its commits in flight, and wait for them."""
        self.runs.request_stop(reason)
        for job in self.running_jobs():
            if job.thread is not None:
                job.thread.join()


def _as_action_error(exc: BaseException) -> ActionError:
    if isinstance(exc, ActionError):
        return exc
    if isinstance(exc, ConnectionLockedError):
        return ActionError(409, mask(str(exc)))
    if isinstance(exc, ConfigError):
        return ActionError(400, mask(exc.message))
    return ActionError(500, mask(f"{type(exc).__name__}: {exc}"))


def _string_list(value: Any, what: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ActionError(400, f"{what} must be a list of stream names")
    return value


def _window(body: Mapping[str, Any]) -> tuple[str, str, str]:
    values = [body.get(key) for key in ("stream", "from", "to")]
    if not all(isinstance(v, str) and v for v in values):
        raise ActionError(400, 'a backfill needs {"stream": S, "from": X, "to": Y} '
                               "(the window [from, to) of S's cursor)")
    return values[0], values[1], values[2]  # type: ignore[return-value]
