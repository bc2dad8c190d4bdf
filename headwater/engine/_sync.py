"""One sync, end to end: plan, persist, run on Spark, commit, release state.

The driver plans and commits; executors read and write.  The order of events,
and why each step is where it is:

1. take the connection's lock (two syncs of one connection would race on state);
2. resume the connection's unfinished run if a killed attempt left one, else
   plan a new run and persist the plan *before reading anything*;
3. per stream (streams side by side), run the checkpoints on Spark in lanes
   (see :class:`~headwater.plan.CheckpointPlan`) and commit each one in
   one idempotent destination transaction;
4. after each commit, close its partitions in the stream's cursor and release,
   in index order, the states the checkpoint manager says are ready (a later
   checkpoint may commit first, but its state waits for every earlier one);
5. at the end of a stream, save the cursor's state: its merged ranges describe
   exactly the committed partitions, so even a failed stream leaves a state
   that neither skips nor repeats data.

An ``overwrite`` stream of more than one checkpoint *stages* each checkpoint
(durable, invisible to the table's readers) instead of committing it, and once
every checkpoint of the run is staged, *publishes* them in one commit that
replaces the table's rows, before the stream counts as succeeded: readers see
the old rows or the new, never part of the new (a run that fails or stops
publishes nothing).  Such a stream moves no state (it is always
``full_refresh``), so staging in place of committing changes nothing else.

A run asked to stop (:meth:`SyncEngine.request_stop`) starts no further
checkpoint, lets the ones in flight commit, then goes through step 5 and ends
``stopped``; the next sync resumes it.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from headwater._waiting import wait_all
from headwater.config import ConnectionConfig, redact
from headwater.destinations import Destination, build_destination
from headwater.destinations._base import CommitMarker, CommitResult, FileWriter, PublishMarker
from headwater.engine._faults import fault_point
from headwater.engine._hooks import run_after_sync_hooks
from headwater.engine._own_state import split_state_rows
from headwater.engine._partition_stats import PartitionStatsCollector
from headwater.engine._plan import checkpoint_count, group_checkpoints, slot_shares
from headwater.engine._plan_reads import headwater_error_from, spark_plan_context
from headwater.engine._realign import lane_app_id_prefix
from headwater.engine._spark import SparkSettings, get_spark
from headwater.engine._steps import StepTimes
from headwater.engine._task import (
    TaskContext,
    interleaved,
    make_task,
    stream_slots,
    task_count,
)
from headwater.engine.checkpoint import CheckpointKey, CheckpointManager
from headwater.engine.connection import build_source, resolve_streams
from headwater.errors import AuthenticationError, HeadwaterError
from headwater.metadata_store import MetadataStore, RunStatus
from headwater.plan import CheckpointPlan, ConfiguredStream, RunPlan, StreamPlan
from headwater.sdk import INCREMENTAL, Cursor, Partition, PlanContext, Source, Stream
from headwater.sync_modes import DestinationSyncMode
from headwater.table_schema import arrow_schema_for

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)


@dataclass
class StreamStats:
    """Per-stream figures of one run, as shown in the summary and in ``--json``."""

    name: str
    mode: str
    status: str = "pending"
    records_read: int = 0
    records_written: int = 0
    records_rejected: int = 0
    bytes: int = 0
    partitions: int = 0
    checkpoints: int = 0
    checkpoints_done: int = 0
    duration_s: float = 0.0
    error: str | None = None
    #: The table version of the commit that published a staged overwrite (see the
    #: module docstring); also recorded on the stream's last checkpoint.
    published_version: int | None = None

    def to_dict(self) -> dict[str, Any]:
        data = {
            "name": self.name,
            "mode": self.mode,
            "status": self.status,
            "records_read": self.records_read,
            "records_written": self.records_written,
            "records_rejected": self.records_rejected,
            "bytes": self.bytes,
            "partitions": self.partitions,
            "checkpoints": self.checkpoints,
            "checkpoints_done": self.checkpoints_done,
            "duration_s": round(self.duration_s, 3),
            "error": self.error,
        }
        if self.published_version is not None:
            data["published_version"] = self.published_version
        return data


@dataclass
class SyncResult:
    run_id: str
    connection: str
    status: str
    resumed: bool
    attempt: int
    streams: list[StreamStats] = field(default_factory=list)
    duration_s: float = 0.0
    #: ``sync``, ``backfill`` or ``replay`` (see :data:`~headwater.plan.RUN_PURPOSES`).
    kind: str = "sync"
    replay_of: str | None = None
    #: What each ``after_sync`` hook did (command, exit code), in order.
    hooks: list[dict[str, Any]] = field(default_factory=list)
    #: Why a ``stopped`` run stopped and what it left (see :meth:`SyncEngine.request_stop`).
    stop_reason: str | None = None
    #: Seconds per step of the sync (:mod:`headwater.engine._steps`): where a small
    #: sync's fixed cost goes.
    steps_s: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data = {
            "run_id": self.run_id,
            "connection": self.connection,
            "status": self.status,
            "resumed": self.resumed,
            "attempt": self.attempt,
            "duration_s": round(self.duration_s, 3),
            "streams": [s.to_dict() for s in self.streams],
        }
        if self.kind != "sync":
            data["kind"] = self.kind
        if self.replay_of is not None:
            data["replay_of"] = self.replay_of
        if self.hooks:
            data["hooks"] = self.hooks
        if self.stop_reason is not None:
            data["stop_reason"] = self.stop_reason
        if self.steps_s:
            data["steps_s"] = self.steps_s
        return data


class SyncObserver:
    """Hooks the CLI uses to draw progress; every method may be called from any thread."""

    def run_started(self, run_id: str, plan: RunPlan, resumed: bool) -> None:
        """The plan is persisted and reading starts."""

    def checkpoint_started(self, stream: str, index: int) -> None:
        """A lane starts checkpoint ``index``: a stop requested from now on lets it commit."""

    def checkpoint_committed(self, stream: str, partitions: int, result: CommitResult) -> None:
        """One checkpoint's data is durable."""

    def stream_finished(self, stats: StreamStats) -> None:
        """A stream succeeded or failed."""


@dataclass(frozen=True)
class SyncOptions:
    spark: SparkSettings = field(default_factory=SparkSettings)


def _parallelism(spark: SparkSession) -> int:
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:  # Spark Connect has no SparkContext on the client
        return int(spark.conf.get("spark.default.parallelism", "4") or 4)


class SyncEngine:
    """Runs one connection's sync (see the module docstring for the order of events)."""

    def __init__(self, connection: ConnectionConfig, store: MetadataStore,
                 options: SyncOptions | None = None, observer: SyncObserver | None = None,
                 *, destination: Destination | None = None) -> None:
        """``destination``: one built already (a test's fake, a program's own), in place
        of the one the connection's ``destination`` section describes."""
        self.connection = connection
        self.store = store
        self.options = options or SyncOptions()
        self.observer = observer or SyncObserver()
        self.source: Source = build_source(connection)
        self.source.prepare()  # its streams, learned while Spark starts
        self.destination: Destination = destination or build_destination(
            connection.destination.type, connection.destination.config)
        if self.options.spark.requirements is None:
            # The session is started with what this destination needs, and only that.
            self.options = replace(self.options, spark=replace(
                self.options.spark, requirements=self.destination.capabilities.spark))
        #: Set when a stream failed because the source refused the credentials.
        self.refused: AuthenticationError | None = None
        #: Set by :meth:`request_stop`; the ``--watch`` loop waits on it too.
        self.stopping = threading.Event()
        self._stop_reason = "stop requested"
        #: Seconds per step of the run in progress (``SyncResult.steps_s``).
        self.steps = StepTimes()

    def start_reads_early(self) -> None:
        """Before Spark starts (``headwater sync`` calls it): let the source start the
        run's reads now, on a local master and for a new run (see ``Source.prepare``).

        Only a guess from the stored states: the plan, made once Spark is up,
        decides what is read, and a source uses an early read only if it matches.
        """
        settings = self.options.spark
        if settings.remote or (settings.master and not settings.master.startswith("local")):
            return
        conn = self.connection
        if not conn.streams or self.store.find_unfinished_run(conn.name) is not None:
            return
        self.source.prepare({
            configured.name: (self.store.get_state(conn.name, configured.name)
                              if configured.sync_mode == INCREMENTAL else None)
            for configured in conn.streams})

    def request_stop(self, reason: str = "stop requested") -> None:
        """End the run in progress after the checkpoints being committed (any thread).

        Each lane looks before it starts a checkpoint, never during one: a
        checkpoint whose Spark job and commit are under way completes,
        commits and releases its state; checkpoints not started are not run.
        Each stream then saves its cursor's state, which describes exactly the
        committed partitions (gaps included), as after a failure.

        The run ends ``stopped`` (exit code 130 from the CLI), and stays
        unfinished: the next sync of the connection resumes it like a killed
        run, re-executing the persisted plan's remaining checkpoints, and only
        the sync after that plans new data.  Resuming, rather than closing the
        run and letting the next sync plan afresh from the state, because:

        * a full refresh (``overwrite``) stopped after some checkpoints has
          staged part of the data (the table still shows the old rows):
          resuming stages the rest of the same snapshot and publishes it, a
          new plan would read it all again;
        * backfills and replays are not planned from state: closed, their
          window would stay half done with nothing to finish it;
        * it is the rule every unfinished run already follows (killed or
          stopped), with its checks: committed checkpoints are recognised in
          the destination and skipped, so nothing lands twice.

        ``reason`` (say ``"SIGINT received"``) is recorded with the run.  The
        engine stays stopped: a later :meth:`run` ends ``stopped`` before its
        first checkpoint, so build a new engine to sync again.
        """
        self._stop_reason = reason
        self.stopping.set()

    # ------------------------------------------------------------------ planning

    def plan(self, spark: SparkSession) -> RunPlan:
        """Partitions and checkpoints of a new run, from the current state.

        Allocates the checkpoint indices in the store: call it for a run that
        will be recorded (``preview`` is the side-effect-free twin).
        """
        parallelism = _parallelism(spark)
        return self._plan(parallelism, spark_plan_context(spark, parallelism), allocate=True)

    def preview(self, parallelism: int | None = None) -> RunPlan:
        """The plan a sync would run now, without reading data or writing anything.

        No run is recorded and no checkpoint index is allocated, so each
        stream's indices here count from 0 (positions, not the indices the real
        run will get).  ``parallelism`` stands in for Spark's default
        parallelism when the connection does not set ``partitions_per_checkpoint``
        (default: this machine's cores, what ``local[*]`` would have).  A
        substream that plans from its parent's records reads those fields in
        this process (:func:`~headwater.sdk.read_fields_locally`): its plan needs them.
        """
        parallelism = parallelism or os.cpu_count() or 1
        return self._plan(parallelism, PlanContext(parallel_tasks=parallelism), allocate=False)

    def per_checkpoint(self, parallelism: int) -> int:
        """Partitions per checkpoint: the connection's, else 8 x parallelism."""
        return (self.connection.checkpoint.partitions_per_checkpoint
                or max(8, parallelism * 8))

    def stream_plan(self, configured: ConfiguredStream, partitions: Sequence[Partition],
                    state: dict[str, Any] | None, *, per_checkpoint: int,
                    allocate: bool = True) -> StreamPlan:
        """Group ``partitions`` into checkpoints, with fresh indices when ``allocate``."""
        conn = self.connection
        overwrite = configured.destination_sync_mode is DestinationSyncMode.OVERWRITE
        # The destination says how many commits of one table may run side by side.
        lanes = self.destination.capabilities.lanes(configured.destination_sync_mode,
                                                    conn.checkpoint.concurrent_checkpoints)
        count = checkpoint_count(len(partitions), per_checkpoint, overwrite)
        first = self.store.allocate_checkpoint_indices(conn.name, configured.name, count) \
            if count and allocate else 0
        checkpoints = group_checkpoints(partitions, first_index=first,
                                        per_checkpoint=per_checkpoint, lanes=lanes,
                                        overwrite=overwrite)
        return StreamPlan(stream=configured, state_before=state, lanes=lanes,
                          checkpoints=checkpoints,
                          json_schema=self.source.stream(configured.name).json_schema())

    def _plan(self, parallelism: int, context: PlanContext, *, allocate: bool) -> RunPlan:
        conn = self.connection
        per_checkpoint = self.per_checkpoint(parallelism)
        stream_plans = []
        for configured in resolve_streams(self.source, conn):
            stream = self.source.stream(configured.name)
            state = self.store.get_state(conn.name, configured.name) if configured.incremental \
                else None
            stream_context = replace(
                context, destination_sync_mode=configured.destination_sync_mode)
            stream_plans.append(self.stream_plan(configured, stream.plan(state, stream_context),
                                                 state, per_checkpoint=per_checkpoint,
                                                 allocate=allocate))
        return RunPlan(connection=conn.name, streams=tuple(stream_plans))

    # ------------------------------------------------------------------ running

    def run(self) -> SyncResult:
        """Sync the connection (or finish its unfinished run first, whatever its kind)."""
        return self._execute(self.plan, new_runs_only=False)

    def run_plan(self, make_plan: Callable[[SparkSession], RunPlan]) -> SyncResult:
        """Record and run the plan ``make_plan`` returns (a backfill or a replay).

        ``make_plan`` is called under the connection's lock, so the indices it
        allocates and the state it reads cannot race with a sync.  A killed
        earlier run must be finished by ``sync`` first: refuses otherwise.
        """
        return self._execute(make_plan, new_runs_only=True)

    def _execute(self, make_plan: Callable[[SparkSession], RunPlan], *,
                 new_runs_only: bool) -> SyncResult:
        conn = self.connection
        started = time.monotonic()
        steps = self.steps
        locking = time.perf_counter()
        with self.store.lock(conn.name) as lock:
            steps.add("lock", time.perf_counter() - locking)
            with steps.step("spark_session"):
                spark = get_spark(self.options.spark)
            with steps.step("store_reads"):
                unfinished = self.store.find_unfinished_run(conn.name)
            if unfinished is not None and new_runs_only:
                how = "stopped" if unfinished.status == "stopped" else "killed"
                raise HeadwaterError(
                    f"connection {conn.name} has an unfinished run {unfinished.run_id} "
                    f"(a {how} {unfinished.kind}); run `headwater sync` to finish it first")
            if unfinished is not None:
                plan = RunPlan.from_dict(unfinished.plan)
                run_id = unfinished.run_id
                resumed = True
                log.warning("resuming run %s of %s, left unfinished by a %s %s", run_id,
                            conn.name, "stopped" if unfinished.status == "stopped" else "killed",
                            unfinished.kind)
            else:
                with steps.step("plan"):
                    plan = make_plan(spark)
                spec = type(self.source).spec()
                with steps.step("store_writes"):
                    run_id = self.store.create_run(
                        conn.name,
                        plan=plan.to_dict(),
                        state_before={s.stream.name: s.state_before for s in plan.streams},
                        config_redacted={"source": {"type": conn.source.type,
                                                    "config": redact(self.source.config, spec)},
                                         "destination": {"type": conn.destination.type},
                                         # `headwater replay RUN_ID` loads the connection
                                         # from here.
                                         "connection_file": (str(conn.path.resolve())
                                                             if conn.path else None)},
                        kind=plan.purpose,
                    )
                resumed = False
            lock.set_run_id(run_id)
            with steps.step("store_writes"):
                attempt = self.store.start_attempt(run_id, pid=os.getpid(),
                                                   host=socket.gethostname())
            fault_point("after-plan")
            self.observer.run_started(run_id, plan, resumed)
            stats = self._run_streams(spark, plan, run_id, attempt)
            status, error = _outcome(stats, self._stop_reason)
            finishing = time.perf_counter()
            states_after = self.store.get_states(conn.name)
            self.store.finish_attempt(run_id, attempt, status=status, error=error)
            run_stats: dict[str, Any] = {"streams": [s.to_dict() for s in stats]}
            if plan.replay_of:
                run_stats["replay_of"] = plan.replay_of
            if status == "stopped":
                log.warning("run %s of %s stopped: %s", run_id, conn.name, error)
                self.store.stop_run(run_id, stats=run_stats, state_after=states_after,
                                    error=error or self._stop_reason)
            else:
                self.store.finish_run(run_id, status=status, stats=run_stats,
                                      state_after=states_after, error=error)
            steps.add("store_writes", time.perf_counter() - finishing)
        result = SyncResult(run_id=run_id, connection=conn.name, status=status, resumed=resumed,
                            attempt=attempt, streams=stats, duration_s=time.monotonic() - started,
                            kind=plan.purpose, replay_of=plan.replay_of,
                            stop_reason=error if status == "stopped" else None)
        # After the lock: a hook (dbt build, a notification) must not block the next sync.
        with steps.step("hooks"):
            result.hooks = run_after_sync_hooks(conn, result)
        result.steps_s = steps.to_dict()
        self.steps = StepTimes()  # the next run (--watch, serve) counts from zero
        log.debug("run %s steps (s): %s", run_id, result.steps_s)
        if self.refused is not None:
            # Credentials refused while reading: the run is recorded as failed and
            # state did not move; the caller sees why (exit code 3), not a crash.
            raise self.refused
        return result

    def _run_streams(self, spark: SparkSession, plan: RunPlan, run_id: str,
                     attempt: int) -> list[StreamStats]:
        runners = [_StreamRunner(self, spark, stream_plan, run_id, attempt, run_plan=plan)
                   for stream_plan in plan.streams]
        if not runners:
            return []
        with ThreadPoolExecutor(max_workers=len(runners), thread_name_prefix="hw-stream") as pool:
            futures = [pool.submit(runner.run) for runner in runners]
            wait_all(futures)  # a signal's handler (request_stop) must still run meanwhile
            return [future.result() for future in futures]


class _StreamRunner:
    """Runs one stream's checkpoints in lanes and moves its state."""

    def __init__(self, engine: SyncEngine, spark: SparkSession, plan: StreamPlan, run_id: str,
                 attempt: int, run_plan: RunPlan) -> None:
        self.engine = engine
        #: Backfills and replays commit like a sync but leave state alone.
        self.moves_state = run_plan.moves_state
        #: A replay's rows keep the id of the run they replace (so replaying is idempotent).
        self.replay_of = run_plan.replay_of
        self.spark = spark
        self.plan = plan
        self.run_id = run_id
        self.attempt = attempt
        self.name = plan.stream.name
        self.connection = engine.connection.name
        self.store = engine.store
        self.stats = StreamStats(name=self.name, mode=plan.stream.mode_label,
                                 partitions=plan.partition_count,
                                 checkpoints=len(plan.checkpoints))
        # Guards the cursor, the manager and the stats: lanes finish checkpoints
        # concurrently, but state must be computed and released one at a time.
        self._lock = threading.Lock()
        self._failed = threading.Event()
        #: Per-partition figures of the checkpoints being read, by checkpoint index.
        self._collectors: dict[int, PartitionStatsCollector] = {}
        #: Set by ``_run`` once the table is prepared: the destination's file writer, if any.
        self.file_writer: FileWriter | None = None
        #: An overwrite of several checkpoints stages them, then publishes them at once
        #: (the module docstring).  Decided from the persisted plan, so every attempt
        #: of the run decides alike; a replay replaces its run's rows in one checkpoint.
        self.staged = (plan.stream.destination_sync_mode is DestinationSyncMode.OVERWRITE
                       and len(plan.checkpoints) > 1 and self.replay_of is None)
        #: Under which name the run's history records each commit's identifier.
        self.commit_id = engine.destination.capabilities.commit_id
        #: Set by ``_run``: the Spark task slots each checkpoint can count on, by index.
        self._slots: dict[int, int] = {}

    def _note_refused(self, exc: BaseException) -> None:
        found = headwater_error_from(exc)
        if isinstance(found, AuthenticationError):
            self.engine.refused = found

    def _marker(self, checkpoint: CheckpointPlan) -> CommitMarker:
        app_id = (lane_app_id_prefix(self.store.store_id, self.connection, self.name)
                  + str(checkpoint.lane))
        return CommitMarker(app_id=app_id, version=checkpoint.index, run_id=self.run_id,
                            stream=self.name, checkpoint_index=checkpoint.index,
                            attempt=self.attempt)

    def run(self) -> StreamStats:
        started = time.monotonic()
        self.stats.status = "running"
        try:
            self._run()
        except Exception as exc:
            self._failed.set()
            self._note_refused(exc)
            self.stats.error = _describe(exc)
            log.error("stream %s failed: %s", self.name, self.stats.error)
        if self._failed.is_set() or self.stats.error:
            self.stats.status = "failed"
        elif self.stats.checkpoints_done < self.stats.checkpoints:
            # Lanes run every checkpoint unless one fails or a stop was requested.
            self.stats.status = "stopped"
        else:
            self.stats.status = "succeeded"
        if self.stats.status == "failed" and self.stats.error is None:
            self.stats.error = "a checkpoint failed (see the log)"
        self.stats.duration_s = time.monotonic() - started
        self.engine.observer.stream_finished(self.stats)
        return self.stats

    def _run(self) -> None:
        stream = self.engine.source.stream(self.name)
        released = self.store.released_indices(self.run_id, self.name)
        todo = [c for c in self.plan.checkpoints if c.index not in released]
        self.stats.checkpoints_done = len(self.plan.checkpoints) - len(todo)
        incremental = self.plan.stream.incremental
        state = self.store.get_state(self.connection, self.name) if incremental else None
        self.cursor: Cursor = stream.cursor(state, incremental)
        state_at_start = self.cursor.state()
        self.manager: CheckpointManager[dict[str, Any]] = CheckpointManager(
            CheckpointKey(c.index, c.checkpoint_id) for c in todo)
        with self.engine.steps.step("table_prepare"):
            data_schema = self.engine.destination.prepare(
                self.spark, self.plan, arrow_schema_for(self.plan.json_schema,
                                              self.plan.stream.json_columns))
            self.context_schema = data_schema
            # A replay replaces rows through Spark; other runs let the tasks write files
            # where the destination can commit them.
            destination = self.engine.destination
            self.file_writer = (destination.file_writer(self.spark, self.plan)
                                if self.replay_of is None
                                and destination.capabilities.task_written_files else None)
            if (self.plan.stream.destination_sync_mode is DestinationSyncMode.OVERWRITE
                    and self.replay_of is None):
                # What failed runs staged is garbage now: only this run can still publish.
                self.engine.destination.clear_staging(self.spark, self.plan,
                                                      keep_run_id=self.run_id)
        if not todo and not self.staged:
            return
        parallelism = _parallelism(self.spark)
        slots = stream_slots(stream, parallelism)
        lanes: dict[int, list[CheckpointPlan]] = {}
        for checkpoint in todo:
            lanes.setdefault(checkpoint.lane, []).append(checkpoint)
        self._slots = slot_shares(list(lanes.values()), slots)
        if not self._failed.is_set() and lanes:
            # Spark runs no more tasks at once than its slots, whatever the lanes; a
            # stream capping its tasks below that runs no more lanes at once than its cap.
            at_once = len(lanes) if slots >= parallelism else min(len(lanes), slots)
            with ThreadPoolExecutor(max_workers=at_once,
                                    thread_name_prefix=f"hw-{self.name}") as pool:
                list(pool.map(lambda cps: self._run_checkpoints(stream, cps), lanes.values()))
        if (self.staged and not self._failed.is_set()
                and self.stats.checkpoints_done == len(self.plan.checkpoints)):
            # Every checkpoint is staged (in this attempt or a killed one): publish.  A
            # stop or a failure leaves them staged and the table as it was.
            self._publish()
        if incremental and self.moves_state:
            # The cursor holds exactly the committed partitions (gaps included), so
            # saving it is right even when a checkpoint failed.  When nothing changed
            # (a first sync whose every checkpoint failed, say on refused credentials)
            # the stored state stays as it was: no empty state appears in its place.
            with self._lock, self.engine.steps.step("store_writes"):
                state_after = self.cursor.state()
                if state_after != state_at_start:
                    self.store.save_state(self.connection, self.name, state_after,
                                          run_id=self.run_id, checkpoint_index=None)
            stream.on_state_committed(state_after)

    def _run_checkpoints(self, stream: Stream, checkpoints: Sequence[CheckpointPlan]) -> None:
        for checkpoint in checkpoints:
            if self._failed.is_set():
                return
            if self.engine.stopping.is_set():
                # Only here, between checkpoints: a commit in flight always completes.
                log.info("stream %s: stop requested, checkpoint %s and later not started",
                         self.name, checkpoint.index)
                return
            self.engine.observer.checkpoint_started(self.name, checkpoint.index)
            marker = self._marker(checkpoint)
            began = time.monotonic()
            try:
                with self.engine.steps.step("checkpoints (Spark job + commit)"):
                    result = self._commit(stream, checkpoint, marker)
            except Exception as exc:
                self._failed.set()
                self._note_refused(exc)
                error = _describe(exc)
                with self._lock:
                    self.manager.mark_failed(checkpoint.checkpoint_id)
                    self.stats.error = error
                self.store.record_checkpoint(
                    self.run_id, self.name, checkpoint.index, checkpoint.checkpoint_id,
                    status="failed", stats={"attempt": self.attempt, "error": error})
                log.error("stream %s checkpoint %s failed: %s", self.name, checkpoint.index,
                          error)
                return
            log.info("stream %s checkpoint %s: %s rows in %.1fs%s", self.name, checkpoint.index,
                     result.rows, time.monotonic() - began,
                     " (committed by an earlier attempt)" if result.already_committed else "")
            with self.engine.steps.step("store_writes"):
                self._committed(checkpoint, result, time.monotonic() - began)

    def _commit(self, stream: Stream, checkpoint: CheckpointPlan,
                marker: CommitMarker) -> CommitResult:
        # A connector's own state matters only where this run moves state.
        keeps_state = (stream.keeps_own_state and self.plan.stream.incremental
                       and self.moves_state)
        destination = self.engine.destination
        if self.attempt > 1:
            find = destination.find_staged if self.staged else destination.find_commit
            earlier = find(self.spark, self.plan, marker)
            if earlier is not None:
                earlier = self._with_recorded_counts(checkpoint, earlier)
                if keeps_state and not earlier.partition_states:
                    earlier = replace(earlier, partition_states=self.store.staged_partition_states(
                        self.run_id, self.name, checkpoint.index))
                return earlier
        collector = self._collector(checkpoint, keeps_state)
        # Without an accumulator (Spark Connect) the states ride in the rows instead.
        in_rows = keeps_state and collector is None
        rows = self._rows(stream, checkpoint, collector, carries_state=in_rows,
                          reports_state=keeps_state and not in_rows, writer=self.file_writer)
        states = None
        if keeps_state:
            # What an attempt whose commit never happened staged must not be released.
            self.store.clear_partition_states(self.run_id, self.name, checkpoint.index)
        if in_rows:
            rows, states = split_state_rows(rows)
            marker = replace(marker, partition_states=states)
        try:
            if (self.replay_of is not None
                    and self.plan.stream.destination_sync_mode
                    is not DestinationSyncMode.APPEND_DEDUP):
                result = destination.replace_run(self.spark, self.plan, checkpoint, rows,
                                                 marker, replaced_run_id=self.replay_of)
            elif self.staged and self.file_writer is not None:
                result = destination.stage_files(self.spark, self.plan, checkpoint, rows, marker)
            elif self.staged:
                result = destination.stage(self.spark, self.plan, checkpoint, rows, marker)
            elif self.file_writer is not None:
                result = destination.commit_files(self.spark, self.plan, checkpoint, rows, marker)
            else:
                result = destination.commit(self.spark, self.plan, checkpoint, rows, marker)
        finally:
            if collector is not None:
                collector.stop_staging()
        result = self._with_recorded_counts(checkpoint, result)
        if keeps_state and collector is not None:
            states = collector.states()
            if collector.staging_error is not None:
                log.warning(
                    "stream %s checkpoint %s: the connector's state was committed with the rows "
                    "but could not be staged in the metadata store (%s); it is released now, "
                    "but had this sync died before that, the next one would have read these "
                    "records again", self.name, checkpoint.index, collector.staging_error)
        return result if states is None else replace(result, partition_states=states)

    def _with_recorded_counts(self, checkpoint: CheckpointPlan,
                              result: CommitResult) -> CommitResult:
        """``result``, with the figures the store recorded when the table no longer has them.

        A commit known only from its lane's txn version (its history entry was
        cleaned up) comes back without figures; an earlier attempt that got as
        far as recording it committed left them in the store.
        """
        if not result.already_committed or result.version is not None or result.rows:
            return result
        for record in self.store.list_checkpoints(self.run_id):
            if record.stream == self.name and record.index == checkpoint.index \
                    and "records_written" in record.stats:
                return replace(result, rows=int(record.stats["records_written"]),
                               rejected=int(record.stats.get("records_rejected", 0)),
                               bytes=int(record.stats.get("bytes", 0)),
                               version=record.stats.get(self.commit_id))
        return result

    def _collector(self, checkpoint: CheckpointPlan,
                   keeps_state: bool) -> PartitionStatsCollector | None:
        """The checkpoint's figures accumulator; it stages own states when ``keeps_state``."""
        def stage(states: dict[str, dict[str, Any]]) -> None:
            self.store.stage_partition_states(self.run_id, self.name, checkpoint.index, states)

        collector = PartitionStatsCollector.start(self.spark, stage if keeps_state else None)
        if collector is not None:
            with self._lock:
                self._collectors[checkpoint.index] = collector
        return collector

    def _rows(self, stream: Stream, checkpoint: CheckpointPlan,
              collector: PartitionStatsCollector | None, *, carries_state: bool,
              reports_state: bool, writer: FileWriter | None = None) -> DataFrame:
        """The checkpoint's rows, or with ``writer`` one row per file its tasks wrote."""
        from pyspark.sql.pandas.types import from_arrow_schema

        context = TaskContext(run_id=self.replay_of or self.run_id,
                              checkpoint_index=checkpoint.index,
                              data_schema=self.context_schema,
                              carries_state=carries_state, reports_state=reports_state)
        output = context.output_schema if writer is None else writer.schema
        spark_schema = from_arrow_schema(_nullable(output))
        count = len(checkpoint.partitions)
        if count == 0:
            return self.spark.createDataFrame([], spark_schema)
        tasks = task_count(stream, count, self._slots[checkpoint.index])
        positions = self.spark.range(0, count, 1, numPartitions=tasks)
        task = make_task(stream, interleaved(checkpoint.partitions, tasks), context,
                         collector.sink if collector else None)
        return positions.mapInArrow(task if writer is None else writer.around(task),
                                    spark_schema)

    def _committed(self, checkpoint: CheckpointPlan, result: CommitResult,
                   duration: float) -> None:
        fault_point("after-commit")
        stats: dict[str, Any] = {
            "attempt": self.attempt,
            "records_read": result.rows,
            "records_written": result.rows,
            "records_rejected": result.rejected,
            "bytes": result.bytes,
            "duration_s": round(duration, 3),
            self.commit_id: result.version,
            "already_committed": result.already_committed,
            "writer": result.writer,
            "writer_reason": result.writer_reason,
            "partitions": [p.id for p in checkpoint.partitions],
        }
        if self.staged:
            stats["staged"] = True  # durable, not visible: the run's publish shows it
        with self._lock:
            collector = self._collectors.pop(checkpoint.index, None)
        if collector is not None and not result.already_committed:
            stats["partition_stats"] = collector.stats(checkpoint.partitions)
        self.store.record_checkpoint(self.run_id, self.name, checkpoint.index,
                                     checkpoint.checkpoint_id, status="committed", stats=stats)
        with self._lock:
            for partition in checkpoint.partitions:
                if partition.id in result.partition_states:
                    self.cursor.observe_state(partition, result.partition_states[partition.id])
                self.cursor.close_partition(partition)
            self.stats.records_read += result.rows
            self.stats.records_written += result.rows
            self.stats.records_rejected += result.rejected
            self.stats.bytes += result.bytes
            self.stats.checkpoints_done += 1
            self.manager.mark_committed(checkpoint.checkpoint_id, stats)
            for key, released_stats in self.manager.release_ready():
                if self.plan.stream.incremental and self.moves_state:
                    # State and the checkpoint's release move in one transaction.
                    self.store.release_checkpoint(self.run_id, self.name, key.index,
                                                  key.checkpoint_id, state=self.cursor.state(),
                                                  stats=released_stats)
                else:
                    self.store.record_checkpoint(self.run_id, self.name, key.index,
                                                 key.checkpoint_id, status="released",
                                                 stats=released_stats)
                fault_point("after-release")
        self.engine.observer.checkpoint_committed(self.name, len(checkpoint.partitions), result)

    def _publish(self) -> None:
        """Replace the table's rows with every staged checkpoint of the run, in one commit.

        The commit's version goes on the stream's figures and on its last
        checkpoint's record (``runs show``), whose commit identifier was empty
        while it was only staged.
        """
        checkpoints = self.plan.checkpoints
        last = checkpoints[-1]
        marker = PublishMarker(
            app_id=lane_app_id_prefix(self.store.store_id, self.connection, self.name)
            + "publish",
            version=last.index, run_id=self.run_id, stream=self.name,
            checkpoints=tuple(c.index for c in checkpoints))
        began = time.monotonic()
        result = self.engine.destination.publish(self.spark, self.plan, marker)
        log.info("stream %s: published %d staged checkpoints (%d rows) as table version %s "
                 "in %.1fs%s", self.name, len(checkpoints), result.rows, result.version,
                 time.monotonic() - began,
                 " (by an earlier attempt)" if result.already_committed else "")
        self.stats.published_version = result.version
        record = next((c for c in self.store.list_checkpoints(self.run_id)
                       if c.stream == self.name and c.index == last.index), None)
        if record is not None:
            self.store.record_checkpoint(
                self.run_id, self.name, last.index, last.checkpoint_id,
                status="released" if record.status == "released" else "committed",
                stats={**record.stats, self.commit_id: result.version,
                       "published": [c.index for c in checkpoints]})


def _outcome(stats: Sequence[StreamStats], stop_reason: str) -> tuple[RunStatus, str | None]:
    """The run's status and error: any failed stream fails it, else any stopped one stops it."""
    failed = [s for s in stats if s.status == "failed"]
    if failed:
        return "failed", "; ".join(f"{s.name}: {s.error}" for s in failed)
    stopped = [s for s in stats if s.status == "stopped"]
    if stopped:
        left = ", ".join(f"{s.name} {s.checkpoints_done} of {s.checkpoints}" for s in stopped)
        return "stopped", (f"{stop_reason}: stopped after the commits in flight, checkpoints "
                           f"committed: {left}; the next sync continues this run")
    return "succeeded", None


def _nullable(schema: pa.Schema) -> pa.Schema:
    import pyarrow as pa

    return pa.schema([f.with_nullable(True) for f in schema])


def _describe(exc: BaseException) -> str:
    found = headwater_error_from(exc)  # also a connector's error that Spark wrapped
    if found is not None:
        return str(found)
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


__all__ = ["StreamStats", "SyncEngine", "SyncObserver", "SyncOptions", "SyncResult"]
