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

Steps 3 to 5 for one stream are :class:`~headwater.engine._stream_runner.StreamRunner`'s;
the results it reports are :mod:`headwater.engine._results`.

A run asked to stop (:meth:`SyncEngine.request_stop`) starts no further
checkpoint, lets the ones in flight commit, then goes through step 5 and ends
``stopped``; the next sync resumes it.  A commit that raised and whose marker
could not be looked up either (:class:`~headwater.errors.CommitOutcomeUnknown`)
ends the run the same way, whatever else failed: its checkpoint's state is
not released, every stream starts no further checkpoint, and the next sync
resumes the run, looks the marker up, and skips the checkpoint if it landed.
The command exits with the error's code (1, or 3 for refused credentials).

:meth:`SyncEngine.sync` (``headwater sync``, ``serve``) does not stop at a
resumed run: once it has succeeded, steps 2 to 5 run again, still under the
lock of step 1, for a new run planned from the state the resumed one
released, so data that arrived after a crash does not wait for another sync.
"""

from __future__ import annotations

import logging
import os
import shutil
import socket
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from headwater._events import emit
from headwater._waiting import wait_all
from headwater.config import ConnectionConfig, SparkConfig, redact
from headwater.destinations import Destination, build_destination
from headwater.engine._contracts import held_to_contracts
from headwater.engine._hooks import run_after_sync_hooks
from headwater.engine._live_progress import live_progress
from headwater.engine._plan import checkpoint_count, group_checkpoints
from headwater.engine._plan_reads import spark_plan_context
from headwater.engine._results import StreamStats, SyncObserver, SyncResult, outcome
from headwater.engine._run_logs import capture_run_logs, name_run_logs, submit_in_run
from headwater.engine._shared_dir import (
    discard_unused,
    make_shared_dir,
    new_shared_dir,
    remove_shared_dir,
    tasks_run_here,
)
from headwater.engine._spark import SparkSettings, default_parallelism, get_spark
from headwater.engine._steps import StepTimes
from headwater.engine._stream_runner import OUTCOME_UNKNOWN, StreamRunner
from headwater.engine.connection import build_source, resolve_streams
from headwater.errors import AuthenticationError, ExitCode, HeadwaterError, SchemaContractError
from headwater.metadata_store import SUCCEEDED_STATUSES, LockHandle, MetadataStore, RunRecord
from headwater.observability.lineage import RunLineage
from headwater.plan import ConfiguredStream, RunPlan, StreamPlan
from headwater.sdk import INCREMENTAL, Partition, PlanContext, Source
from headwater.sync_modes import DestinationSyncMode

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SyncOptions:
    spark: SparkSettings = field(default_factory=SparkSettings)


@dataclass(frozen=True)
class _RunDone:
    """One run ended under the lock: what is left to do for it after the lock."""

    result: SyncResult
    plan: RunPlan
    steps: StepTimes


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
        self.source: Source = build_source(connection, self.options.spark)
        self.source.prepare()  # its streams, learned while Spark starts
        self.destination: Destination = destination or build_destination(
            connection.destination.type, connection.destination.config)
        self.destination.use_connection(connection.name, self._namespace_of)
        if self.options.spark.requirements is None:
            # The session is started with what this destination needs, and only that.
            self.options = replace(self.options, spark=replace(
                self.options.spark, requirements=self.destination.capabilities.spark))
        #: OpenLineage run events of every run (off unless configured; never fails a run).
        self.lineage = RunLineage.for_connection(connection, self.source, self.destination)
        #: Set when a stream failed because the source refused the credentials.
        self.refused: AuthenticationError | None = None
        #: Set when a task met a change its stream's schema contract freezes.
        self.contract_broken: SchemaContractError | None = None
        #: Set by :meth:`request_stop`; the ``--watch`` loop waits on it too.
        self.stopping = threading.Event()
        self._stop_reason = "stop requested"
        #: Seconds per step of the run in progress (``SyncResult.steps_s``).
        self.steps = StepTimes()
        #: How the run will be planned, when its reads were started before Spark.
        self._early: PlanContext | None = None

    def start_reads_early(self) -> None:
        """Before Spark starts (``headwater sync`` calls it): let the source start the
        run's reads now, on a local master and for a new run (see ``Source.prepare``).

        Only a guess from the stored states: the plan, made once Spark is up,
        decides what is read, and a source uses an early read only if it matches.
        """
        settings = self.options.spark
        if settings.remote or (settings.master and not settings.master.startswith("local")):
            return
        if "PYSPARK_GATEWAY_PORT" in os.environ:
            return  # under spark-submit: the master is its flags', perhaps a cluster
        conn = self.connection
        if not conn.streams or self.store.find_unfinished_run(conn.name) is not None:
            return
        reads = {configured.name: (self.store.get_state(conn.name, configured.name)
                                   if configured.sync_mode == INCREMENTAL else None)
                 for configured in conn.streams}
        # What the plan will be made with, so early reads are the plan's own reads.
        self._early = PlanContext(parallel_tasks=os.cpu_count() or 1,
                                  planned_at=datetime.now(UTC), synced_states=reads,
                                  shared_dir=make_shared_dir(), reads_early=True)
        if self.source.prepare(reads, self._early):
            # The reads are the critical path now: Spark's start takes the cores they leave.
            nice = (conn.spark or SparkConfig()).early_reads_jvm_nice
            self.options = replace(self.options, spark=replace(self.options.spark,
                                                               jvm_nice=nice))

    def _end_early_reads(self, plan: RunPlan | None) -> None:
        """Early reads the run's ``plan`` did not take up stop: their folder goes."""
        early, self._early = self._early, None
        if early is not None and early.shared_dir and (
                plan is None or plan.shared_dir != early.shared_dir):
            shutil.rmtree(early.shared_dir, ignore_errors=True)

    def _namespace_of(self, stream: str) -> str | None:
        """The source's namespace of ``stream`` (None: it has none, or no such stream)."""
        try:
            return self.source.stream(stream).namespace
        except Exception:
            return None

    def request_stop(self, reason: str = "stop requested") -> None:
        """End the run in progress after the checkpoints being committed (any thread).

        Each lane looks before it starts a checkpoint, never during one: a
        checkpoint whose Spark job and commit are under way completes,
        commits and releases its state; checkpoints not started are not run.
        Each stream then saves its cursor's state, which describes exactly the
        committed partitions (gaps included), as after a failure.

        The run ends ``stopped`` (exit code 130 from the CLI), and stays
        unfinished: the next sync of the connection resumes it like a killed
        run, re-executing the persisted plan's remaining checkpoints, then
        (:meth:`sync`) plans new data in a run of its own.  A stop requested
        while :meth:`sync` resumes a run also keeps the new run from starting.
        Resuming, rather than closing the run and letting the next sync plan
        afresh from the state, because:

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
        parallelism = default_parallelism(spark)
        context = spark_plan_context(spark, parallelism)
        early = self._early
        if early is not None and tasks_run_here(spark):
            # Planned as the early reads were: same moment, same folder.
            context = replace(context, planned_at=early.planned_at,
                              shared_dir=early.shared_dir, reads_early=True)
        else:
            context = replace(context, shared_dir=new_shared_dir(spark))
        return self._plan(parallelism, context, allocate=True, spark=spark)

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
                          json_schema=self.source.stream(configured.name).json_schema(),
                          planned_at=datetime.now(UTC).isoformat())

    def _plan(self, parallelism: int, context: PlanContext, *, allocate: bool,
              spark: SparkSession | None = None) -> RunPlan:
        conn = self.connection
        per_checkpoint = self.per_checkpoint(parallelism)
        configured_streams = resolve_streams(self.source, conn)
        if spark is not None:  # a run to record: its schema contracts hold first
            configured_streams = held_to_contracts(self, configured_streams, spark)
        states = {configured.name: (self.store.get_state(conn.name, configured.name)
                                    if configured.incremental else None)
                  for configured in configured_streams}
        # One planning moment and the run's streams, for every stream (PlanContext).
        context = replace(context, planned_at=context.planned_at or datetime.now(UTC),
                          synced_states=states)
        stream_plans = []
        for configured in configured_streams:
            stream = self.source.stream(configured.name)
            state = states[configured.name]
            stream_context = replace(
                context, destination_sync_mode=configured.destination_sync_mode,
                incremental=configured.incremental)
            stream_plans.append(self.stream_plan(configured, stream.plan(state, stream_context),
                                                 state, per_checkpoint=per_checkpoint,
                                                 allocate=allocate))
        return RunPlan(connection=conn.name, streams=tuple(stream_plans),
                       shared_dir=discard_unused(context.shared_dir, stream_plans))

    # ------------------------------------------------------------------ running

    def run(self) -> SyncResult:
        """One run: the connection's unfinished run if a killed or stopped sync left one
        (whatever its kind), else a new one from the current state.

        :meth:`sync` (what ``headwater sync`` and ``serve`` call) goes on, after
        a resumed run, with a new one; ``--watch`` and ``sync --one-run`` call this.
        """
        [result] = self._execute(self.plan, new_runs_only=False, then_new=False)
        return result

    def sync(self) -> list[SyncResult]:
        """Finish the unfinished run if there is one, then sync everything since: the
        results of the runs, oldest first (one, or two when a run was resumed).

        Without this, data that arrived after a crash would wait for one more
        sync while the resumed run re-executes its old plan.  The new run is
        planned from the state the resumed run released, under the same hold of
        the connection's lock (no other sync can slip in between), and only
        when the resumed run succeeded and no stop was requested: a failed or
        stopped resumed run is the last result, and what it left is the next
        sync's to finish.  Each run has its own run id, attempt, figures and
        ``after_sync`` hooks, exactly as if two syncs had run back to back.

        The new run is a whole sync, like any: its ``full_refresh`` streams are
        read again (the resumed run's snapshot was planned before the crash, so
        rows that arrived since are not in it), and a ``full_refresh`` +
        ``append`` stream gets a snapshot per run, two here.  ``run()`` (``sync
        --one-run``) is for a connection where that second read costs too much.
        """
        return self._execute(self.plan, new_runs_only=False, then_new=True)

    def run_plan(self, make_plan: Callable[[SparkSession], RunPlan]) -> SyncResult:
        """Record and run the plan ``make_plan`` returns (a backfill or a replay).

        ``make_plan`` is called under the connection's lock, so the indices it
        allocates and the state it reads cannot race with a sync.  A killed
        earlier run must be finished by ``sync`` first: refuses otherwise.
        """
        [result] = self._execute(make_plan, new_runs_only=True, then_new=False)
        return result

    def _execute(self, make_plan: Callable[[SparkSession], RunPlan], *,
                 new_runs_only: bool, then_new: bool) -> list[SyncResult]:
        conn = self.connection
        started = time.monotonic()
        locking = time.perf_counter()
        done: list[_RunDone] = []
        failure: Exception | None = None
        with self.store.lock(conn.name) as lock:
            self.steps.add("lock", time.perf_counter() - locking)
            with self.steps.step("spark_session"):
                spark = get_spark(self.options.spark)
            with self.steps.step("store_reads"):
                unfinished = self.store.find_unfinished_run(conn.name)
            if unfinished is not None and new_runs_only:
                how = "stopped" if unfinished.status == "stopped" else "killed"
                raise HeadwaterError(
                    f"connection {conn.name} has an unfinished run {unfinished.run_id} "
                    f"(a {how} {unfinished.kind}); run `headwater sync` to finish it first")
            with capture_run_logs(self.store):  # its log lines, for `headwater ui`
                done.append(self._one_run(spark, lock, make_plan, unfinished, started))
            if unfinished is not None and then_new and self._goes_on_after(done[0].result):
                try:
                    with capture_run_logs(self.store):
                        done.append(self._one_run(spark, lock, make_plan, None,
                                                  time.monotonic(),
                                                  follows=done[0].result.run_id))
                except Exception as exc:
                    # The new run could not run (say its plan failed): the resumed
                    # run has ended all the same, and its hooks are owed first.
                    failure = exc
        for run in done:
            run.result.steps_s = self._after_lock(run)
        if failure is not None:
            raise failure
        if self.refused is not None:
            # Credentials refused while reading: the run is recorded as failed and
            # state did not move; the caller sees why (exit code 3), not a crash.
            raise self.refused
        if self.contract_broken is not None:
            # A frozen contract met in the rows: the checkpoint did not commit (exit 5).
            raise self.contract_broken
        return [run.result for run in done]

    def _after_lock(self, run: _RunDone) -> dict[str, float]:
        """A run's work after the connection's lock is released; returns its step times.

        After the lock: a hook (dbt build, a notification) must not block the next sync.
        """
        if run.result.status != "stopped":
            remove_shared_dir(run.plan)  # a stopped run resumes, and may still read from it
        with run.steps.step("hooks"):
            run.result.hooks = run_after_sync_hooks(self.connection, run.result)
        log.debug("run %s steps (s): %s", run.result.run_id, run.steps.to_dict())
        return run.steps.to_dict()

    def _goes_on_after(self, resumed: SyncResult) -> bool:
        """Whether :meth:`sync` starts a new run after the ``resumed`` one."""
        if resumed.status not in SUCCEEDED_STATUSES or self.refused is not None:
            return False
        if self.stopping.is_set():
            log.warning("run %s of %s finished; not starting a new run: %s", resumed.run_id,
                        self.connection.name, self._stop_reason)
            return False
        return True

    def _one_run(self, spark: SparkSession, lock: LockHandle,
                 make_plan: Callable[[SparkSession], RunPlan], unfinished: RunRecord | None,
                 started: float, *, follows: str | None = None) -> _RunDone:
        """Resume ``unfinished``, or plan and record a new run, and run it (under the lock).

        ``follows``: the run :meth:`sync` resumed just before this new one, recorded with
        it (``follows_resumed``) so a list can tell the run that did the work from an
        empty follow-up."""
        conn = self.connection
        steps = self.steps
        if unfinished is not None:
            self._end_early_reads(None)
            plan = RunPlan.from_dict(unfinished.plan)
            run_id = unfinished.run_id
            resumed = True
            log.warning("resuming run %s of %s, left unfinished by a %s %s", run_id,
                        conn.name, "stopped" if unfinished.status == "stopped" else "killed",
                        unfinished.kind)
        else:
            try:
                with steps.step("plan"):
                    plan = make_plan(spark)
            except BaseException:
                self._end_early_reads(None)
                raise
            self._end_early_reads(plan)
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
        name_run_logs(run_id)  # the lines captured so far, and from now on, are this run's
        with steps.step("store_writes"):
            attempt = self.store.start_attempt(run_id, pid=os.getpid(),
                                               host=socket.gethostname())
        emit("after-plan")
        self.observer.run_started(run_id, plan, resumed)
        lineage = self.lineage.started(run_id, plan, attempt=attempt, resumed=resumed)
        try:
            stats = self._run_streams(spark, plan, run_id, attempt)
        except BaseException as exc:
            # The run stays unfinished (the next sync resumes it), but it has ended here.
            lineage.ended("stopped" if isinstance(exc, KeyboardInterrupt) else "failed",
                          error=f"{type(exc).__name__}: {exc}")
            raise
        unchecked = self._unchecked(run_id, attempt) if attempt > 1 else []
        status, error = outcome(stats, self._stop_reason, unchecked)
        # Stopped by a commit whose outcome is unknown, not on request: the error's exit code.
        exit_code = None
        if status == "stopped" and (unchecked or any(s.outcome_unknown for s in stats)):
            exit_code = int(self.refused.exit_code if self.refused else ExitCode.FAILED)
        finishing = time.perf_counter()
        states_after = self.store.get_states(conn.name)
        self.store.finish_attempt(run_id, attempt, status=status, error=error)
        run_stats: dict[str, Any] = {"streams": [s.to_dict() for s in stats],
                                     # Kept with the run, whoever started it: the page shows
                                     # them (the hooks, after the lock, are not in yet).
                                     "steps_s": steps.to_dict()}
        if plan.replay_of:
            run_stats["replay_of"] = plan.replay_of
        if follows is not None:
            run_stats["follows_resumed"] = follows
        if status == "stopped":
            log.warning("run %s of %s stopped: %s", run_id, conn.name, error)
            self.store.stop_run(run_id, stats=run_stats, state_after=states_after,
                                error=error or self._stop_reason)
        else:
            self.store.finish_run(run_id, status=status, stats=run_stats,
                                  state_after=states_after, error=error)
        steps.add("store_writes", time.perf_counter() - finishing)
        emit("run-recorded")
        lineage.ended(status, error=error, streams=stats)
        result = SyncResult(run_id=run_id, connection=conn.name, status=status, resumed=resumed,
                            attempt=attempt, streams=stats, duration_s=time.monotonic() - started,
                            kind=plan.purpose, replay_of=plan.replay_of,
                            stop_reason=error if status == "stopped" else None,
                            exit_code=exit_code)
        self.steps = StepTimes()  # the next run (sync's new run, --watch, serve) counts from zero
        return _RunDone(result, plan, steps)

    def _unchecked(self, run_id: str, attempt: int) -> list[str]:
        """Checkpoints an earlier attempt could not check (``CommitOutcomeUnknown``) and
        this attempt did not look up (it failed before them): each ``stream: why``.

        Such a checkpoint keeps the run resumable whatever else happened: closing
        the run would let the next sync plan anew and write it again.
        """
        return [f"{c.stream}: whether checkpoint {c.index} landed is still unchecked "
                f"(attempt {c.stats.get('attempt')} could not look it up, this attempt did not "
                "get to it); the next sync resumes this run and checks again"
                for c in self.store.list_checkpoints(run_id)
                if c.status == "failed" and c.stats.get(OUTCOME_UNKNOWN)
                and c.stats.get("attempt") != attempt]

    def _run_streams(self, spark: SparkSession, plan: RunPlan, run_id: str,
                     attempt: int) -> list[StreamStats]:
        if not plan.streams:
            return []
        halt = threading.Event()  # a commit's outcome is unknown: no stream starts another
        # Records read so far within checkpoints, for the page and /metrics (._live_progress).
        with live_progress(spark, self.store, run_id) as live:
            runners = [StreamRunner(self, spark, stream_plan, run_id, attempt, run_plan=plan,
                                    halt=halt, live=live)
                       for stream_plan in plan.streams]
            with ThreadPoolExecutor(max_workers=len(runners),
                                    thread_name_prefix="hw-stream") as pool:
                futures = [submit_in_run(pool, runner.run) for runner in runners]
                wait_all(futures)  # a signal's handler (request_stop) must still run meanwhile
                return [future.result() for future in futures]


__all__ = ["SyncEngine", "SyncOptions"]
