"""One stream's part of a run: its checkpoints in lanes, each committed once, and its state.

See :mod:`headwater.engine._sync` for the order of events of the whole run;
how each checkpoint reaches the destination is :mod:`headwater.engine._commit_routes`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from headwater._events import emit
from headwater.destinations._base import CommitMarker, CommitResult, FileWriter, PublishMarker
from headwater.engine._abort import abort_failed
from headwater.engine._commit_routes import CommitRows, choose_route
from headwater.engine._contracts import stream_contract
from headwater.engine._live_progress import LiveProgress
from headwater.engine._markers import checkpoint_marker, lane_app_id_prefix
from headwater.engine._own_state import split_state_rows
from headwater.engine._partition_stats import PartitionStatsCollector
from headwater.engine._plan import slot_shares
from headwater.engine._plan_reads import headwater_error_from
from headwater.engine._quarantine import QuarantineTable
from headwater.engine._results import StreamStats, stream_warnings
from headwater.engine._run_logs import submit_in_run
from headwater.engine._spark import default_parallelism
from headwater.engine._task import (
    TaskContext,
    interleaved,
    make_frame_task,
    make_task,
    stream_slots,
    task_count,
)
from headwater.engine.checkpoint import CheckpointKey, CheckpointManager
from headwater.errors import (
    AuthenticationError,
    CommitOutcomeUnknown,
    CommitOutcomeUnknownError,
    ConfigError,
    ExpectationFailed,
    RefusedCommitOutcomeUnknown,
    SchemaContractError,
    StoreBehindTableError,
)
from headwater.expectations import STATS_KEY, StreamChecks, add_counts, configured_expectations
from headwater.metadata_store import DURABLE_CHECKPOINT_STATUSES
from headwater.plan import CheckpointPlan, RunPlan, StreamPlan
from headwater.schema_contracts import RowContract, refuse_frozen
from headwater.sdk import Cursor, Stream
from headwater.sync_modes import DestinationSyncMode

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

    from headwater.engine._sync import SyncEngine

log = logging.getLogger("headwater.engine._sync")


class StreamRunner:
    """Runs one stream's checkpoints in lanes and moves its state."""

    def __init__(self, engine: SyncEngine, spark: SparkSession, plan: StreamPlan, run_id: str,
                 attempt: int, run_plan: RunPlan, halt: threading.Event | None = None,
                 live: LiveProgress | None = None) -> None:
        """``halt``: the run's, shared by its streams; set when a commit's outcome is
        unknown, it starts no further checkpoint in any of them (as a stop request).
        ``live``: where the tasks report records read within a checkpoint (None: nowhere)."""
        self.engine = engine
        self.live = live
        self._halt = halt or threading.Event()
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
        #: Checkpoints that failed before their commit landed: the destination's
        #: :meth:`~headwater.destinations.Destination.abort` drops what they left.
        self._aborted: list[tuple[CheckpointPlan, CommitMarker]] = []
        #: Per-partition figures of the checkpoints being read, by checkpoint index.
        self._collectors: dict[int, PartitionStatsCollector] = {}
        #: Set by ``_run`` once the table is prepared: how checkpoints reach the destination.
        self.route: CommitRows = CommitRows(engine.destination)
        #: An overwrite of several checkpoints stages them, then publishes them at once
        #: (the module docstring).  Decided from the persisted plan, so every attempt
        #: of the run decides alike; a replay replaces its run's rows in one checkpoint.
        self.staged = (plan.stream.destination_sync_mode is DestinationSyncMode.OVERWRITE
                       and len(plan.checkpoints) > 1 and self.replay_of is None)
        #: Under which name the run's history records each commit's identifier.
        self.commit_id = engine.destination.capabilities.commit_id
        #: Set by ``_run``: the Spark task slots each checkpoint can count on, by index.
        self._slots: dict[int, int] = {}
        #: Set by ``_run``: what the tasks do to rows under the stream's schema contract.
        self.row_contract: RowContract | None = None
        #: Set by ``_run`` when the stream has expectations (:mod:`headwater.expectations`).
        self.checks: StreamChecks | None = None
        #: Set by ``_run`` when one of them quarantines (:mod:`._quarantine`).
        self.quarantine: QuarantineTable | None = None

    def _outcome_unknown(self, exc: BaseException) -> bool:
        """Whether ``exc`` says a commit's outcome is unknown; if so, halt the run.

        The run then stays unfinished (:func:`~headwater.engine._results.outcome`):
        the next sync resumes it and looks the commit up again.  Every stream of
        the run starts no further checkpoint (those in flight commit), as on a
        stop request: the destination that could not answer is likely theirs
        too, and all they leave is resumed with the rest.
        """
        if _unknown_in(exc) is None:
            return False
        with self._lock:
            self.stats.outcome_unknown = True
        self._halt.set()
        return True

    def _note_refused(self, exc: BaseException) -> None:
        found = headwater_error_from(exc)
        if isinstance(found, AuthenticationError):
            self.engine.refused = found
        elif isinstance(found, SchemaContractError):
            self.engine.contract_broken = found

    def _marker(self, checkpoint: CheckpointPlan) -> CommitMarker:
        return checkpoint_marker(self.store.store_id, self.connection, self.name,
                                 self.run_id, checkpoint, attempt=self.attempt)

    def run(self) -> StreamStats:
        started = time.monotonic()
        self.stats.status = "running"
        try:
            self._run()
        except Exception as exc:
            self._note_refused(exc)
            if not self._outcome_unknown(exc):  # a publish's: the run stays resumable
                self._failed.set()
            self.stats.error = describe_error(exc)
            log.error("stream %s failed: %s", self.name, self.stats.error)
        if self._failed.is_set() or (self.stats.error and not self.stats.outcome_unknown):
            self.stats.status = "failed"
        elif self.stats.outcome_unknown or self.stats.checkpoints_done < self.stats.checkpoints:
            # Lanes run every checkpoint unless one fails or a stop was requested.
            self.stats.status = "stopped"
        else:
            self.stats.status = "succeeded"
        if self.stats.status == "failed" and self.stats.error is None:
            self.stats.error = "a checkpoint failed (see the log)"
        if self.attempt > 1:
            self._count_whole_run()
        if self.stats.status == "succeeded":
            self._judge()
        self.stats.duration_s = time.monotonic() - started
        self.engine.observer.stream_finished(self.stats)
        emit("stream-done")
        return self.stats

    def _judge(self) -> None:
        """A stream that committed everything but looks wrong is ``warned``, or with
        ``on_warning: fail`` ``failed`` (:func:`stream_warnings`); its records stay
        committed and its state moved, either way."""
        found = stream_warnings(self.stats,
                                self.engine.destination.unwritten_columns(self.name))
        if not found:
            return
        self.stats.warnings = found
        for warning in found:
            log.warning("stream %s: %s", self.name, warning)
        if self.engine.connection.on_warning_of(self.name) == "fail":
            self.stats.status = "failed"
            self.stats.error = "; ".join(found) + " (on_warning: fail)"
        else:
            self.stats.status = "warned"

    def _count_whole_run(self) -> None:
        """Make the stream's figures the run's, not this attempt's: what every attempt's
        durable checkpoints hold, as the run page and ``/metrics`` count them.

        A resumed attempt skips the checkpoints an earlier one released (they
        are not run again, so :meth:`_committed` never counts them), and an earlier attempt may
        have committed a checkpoint this one never reached (stopped or failed
        before it).  The checkpoint records hold each checkpoint's figures once,
        whichever attempt recorded it last.  If the store cannot be read, the
        figures stay this attempt's: they are a report, the data and state are
        already where they belong.
        """
        try:
            durable = [c.stats for c in self.store.list_checkpoints(self.run_id)
                       if c.stream == self.name and c.status in DURABLE_CHECKPOINT_STATUSES]
        except Exception as exc:
            log.warning("stream %s: the figures of run %s's earlier attempts could not be "
                        "read (%s); its figures are this attempt's only", self.name,
                        self.run_id, describe_error(exc))
            return
        with self._lock:
            self.stats.records_read = sum(int(s.get("records_read") or 0) for s in durable)
            self.stats.expectations = {}
            for figures in durable:
                add_counts(self.stats.expectations, figures.get(STATS_KEY))
            self.stats.records_written = sum(int(s.get("records_written") or 0)
                                             for s in durable)
            self.stats.records_rejected = sum(int(s.get("records_rejected") or 0)
                                              for s in durable)
            self.stats.bytes = sum(int(s.get("bytes") or 0) for s in durable)
            self.stats.records_discarded = sum(int(s.get("records_discarded") or 0)
                                               for s in durable)
            self.stats.discarded = {}
            for figures in durable:
                for reason, count in (figures.get("discarded") or {}).items():
                    self.stats.discarded[reason] = self.stats.discarded.get(reason, 0) + count

    def _run(self) -> None:
        stream = self.engine.source.stream(self.name)
        released = self.store.released_indices(self.run_id, self.name)
        todo = [c for c in self.plan.checkpoints if c.index not in released]
        self.stats.checkpoints_done = len(self.plan.checkpoints) - len(todo)
        if released:
            self._report_resumed(released)
        incremental = self.plan.stream.incremental
        state = self.store.get_state(self.connection, self.name) if incremental else None
        self.cursor: Cursor = stream.cursor(state, incremental)
        state_at_start = self.cursor.state()
        self.manager: CheckpointManager[dict[str, Any]] = CheckpointManager(
            CheckpointKey(c.index, c.checkpoint_id) for c in todo)
        with self.engine.steps.step("table_prepare"):
            # Before the table changes.  Which streams run was decided when the plan was
            # made (a new table a contract keeps out is not in it): a resumed plan's
            # streams all run, or its run would stay unfinished for good.
            contract = stream_contract(self.engine, self.plan.stream, spark=self.spark)
            refuse_frozen(contract.changes)
            self.row_contract = contract.rows
            data_schema = self.engine.destination.prepare(self.spark, self.plan,
                                                          contract.written)
            self.context_schema = data_schema
            destination = self.engine.destination
            # A replay replaces rows through Spark; other runs let the tasks write files
            # where the destination can commit them.
            writer = (destination.file_writer(self.spark, self.plan, run_id=self.run_id)
                      if self.replay_of is None
                      and destination.capabilities.task_written_files else None)
            self.route = choose_route(destination, self.plan, staged=self.staged, writer=writer,
                                      replay_of=self.replay_of)
            expectations = configured_expectations(self.engine.connection, self.name)
            if any(e.action == "quarantine" for e in expectations):
                self.quarantine = QuarantineTable.prepare(
                    self.spark, destination, self.plan, data_schema, run_id=self.run_id,
                    replay_of=self.replay_of)
            self.checks = StreamChecks.start(
                self.spark, self.plan, expectations, data_schema,
                tasks_write_both=self.quarantine is not None
                and self.quarantine.split_writer(writer) is not None)
            if (self.plan.stream.destination_sync_mode is DestinationSyncMode.OVERWRITE
                    and self.replay_of is None):
                # What failed runs staged is garbage now: only this run can still publish.
                self.engine.destination.clear_staging(self.spark, self.plan,
                                                      keep_run_id=self.run_id)
        if not todo and not self.staged:
            return
        parallelism = default_parallelism(self.spark)
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
                lane_runs = [submit_in_run(pool, self._run_checkpoints, stream, cps)
                             for cps in lanes.values()]
                for lane_run in lane_runs:
                    lane_run.result()
            abort_failed(self.engine.destination, self.spark, self.plan, self._aborted)
            if self.quarantine is not None:
                self.quarantine.remove(self.spark, self._aborted, self.replay_of or self.run_id)
        if (self.staged and not self._failed.is_set()
                and self.stats.checkpoints_done == len(self.plan.checkpoints)):
            # Every checkpoint is staged (in this attempt or a killed one): publish.  A
            # stop or a failure leaves them staged and the table as it was.
            self._publish()
            emit("after-publish")
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
            emit("after-state")

    def _report_resumed(self, released: set[int]) -> None:
        """Tell the observer what earlier attempts released (a progress bar starts there)."""
        done = [c for c in self.plan.checkpoints if c.index in released]
        rows = sum(int(c.stats.get("records_written") or 0)
                   for c in self.store.list_checkpoints(self.run_id)
                   if c.stream == self.name and c.index in released)
        self.engine.observer.stream_resumed(self.name, sum(len(c.partitions) for c in done),
                                            rows)

    def _run_checkpoints(self, stream: Stream, checkpoints: Sequence[CheckpointPlan]) -> None:
        for checkpoint in checkpoints:
            if self._failed.is_set():
                return
            if self.engine.stopping.is_set():
                # Only here, between checkpoints: a commit in flight always completes.
                log.info("stream %s: stop requested, checkpoint %s and later not started",
                         self.name, checkpoint.index)
                return
            if self._halt.is_set():
                log.info("stream %s: a commit's outcome is unknown, checkpoint %s and later "
                         "not started (the next sync resumes the run)", self.name,
                         checkpoint.index)
                return
            self.engine.observer.checkpoint_started(self.name, checkpoint.index)
            marker = self._marker(checkpoint)
            began = time.monotonic()
            try:
                with self.engine.steps.step("checkpoints (Spark job + commit)"):
                    found = self._earlier_commit(stream, checkpoint, marker)
                    result = (found if found is not None
                              else self._commit(stream, checkpoint, marker))
            except Exception as raised:
                landed, exc = self._landed_despite(stream, checkpoint, marker, raised)
                if landed is not None:
                    with self.engine.steps.step("store_writes"):
                        self._committed(checkpoint, landed, time.monotonic() - began)
                        self._checkpoint_ended(checkpoint)
                    continue
                self._note_refused(exc)
                unknown = self._outcome_unknown(exc)
                if not unknown:
                    self._failed.set()
                if not unknown and not isinstance(headwater_error_from(exc),
                                                  StoreBehindTableError):
                    # Its commit did not land (a landed one it must not touch is the
                    # store's mistake, not debris): what it left is dropped.
                    with self._lock:
                        self._aborted.append((checkpoint, marker))
                error = describe_error(exc)
                with self._lock:
                    self.manager.mark_failed(checkpoint.checkpoint_id)
                    self.stats.error = error
                # ``outcome_unknown``: not released, and the run stays resumable until an
                # attempt looks it up (``SyncEngine._one_run``); a later record replaces it.
                self.store.record_checkpoint(
                    self.run_id, self.name, checkpoint.index, checkpoint.checkpoint_id,
                    status="failed", stats={"attempt": self.attempt, "error": error,
                                            **self._unknown_outcome_stats(checkpoint, unknown)})
                self._checkpoint_ended(checkpoint)
                log.error("stream %s checkpoint %s failed: %s", self.name, checkpoint.index,
                          error)
                return
            if found is not None:
                at = f" at {self.commit_id} {result.version}" if result.version is not None else ""
                log.info("stream %s checkpoint %s was already %s%s by an earlier attempt (%s "
                         "rows); skipped, nothing read again", self.name, checkpoint.index,
                         "staged" if self.staged else "committed", at, result.rows)
            else:
                log.info("stream %s checkpoint %s: %s rows in %.1fs%s", self.name,
                         checkpoint.index, result.rows, time.monotonic() - began,
                         " (committed by an earlier attempt)" if result.already_committed
                         else "")
            with self.engine.steps.step("store_writes"):
                self._committed(checkpoint, result, time.monotonic() - began,
                                found_committed=found is not None)
                self._checkpoint_ended(checkpoint)

    def _unknown_outcome_stats(self, checkpoint: CheckpointPlan,
                               unknown: bool) -> dict[str, Any]:
        """What a failed checkpoint's record keeps besides its error: for a commit whose
        outcome is unknown, that, and its expectations' counts.

        The counts exist only in this attempt (the checks kept them when the commit
        raised); the attempt that finds the commit landed reads no rows again, so it
        has only the record to take them from (``StreamChecks.stats_of``'s
        ``recorded``), or the run's summary, ``runs show`` and ``/metrics`` would
        count none for the checkpoint.  A checkpoint that surely did not land has its
        counts dropped: its rows are read again by the next run.
        """
        counts = self.checks.stats_of(checkpoint) if self.checks is not None else {}
        return {OUTCOME_UNKNOWN: True, **counts} if unknown else {}

    def _checkpoint_ended(self, checkpoint: CheckpointPlan) -> None:
        """Its records read so far are no longer live: committed, or failed."""
        if self.live is not None:
            self.live.checkpoint_ended(self.name, checkpoint.index)

    def _keeps_state(self, stream: Stream) -> bool:
        """Whether the connector's own state rides with this stream's commits: it matters
        only where this run moves state."""
        return stream.keeps_own_state and self.plan.stream.incremental and self.moves_state

    def _earlier_commit(self, stream: Stream, checkpoint: CheckpointPlan,
                        marker: CommitMarker) -> CommitResult | None:
        """An earlier attempt's commit (or staging) of the checkpoint, found by its marker
        before anything is read; None on a first attempt or when there is none.

        Why a lookup first, though a destination may skip a repeated commit by its
        own idempotency pair (``CommitMarker.app_id``/``version``): the checkpoint
        is then neither read from the source nor written again, and a destination
        without such a pair has only its markers.  The run records what was found
        (``found_committed`` in the checkpoint's figures, and a log line).
        """
        if self.attempt == 1:
            return None
        try:
            return self._found_commit(stream, checkpoint, marker)
        except (StoreBehindTableError, CommitOutcomeUnknown):
            raise
        except Exception as exc:
            # An earlier attempt may have committed it: no answer is no "not there".
            raise _lookup_failed(exc, marker) from exc

    def _landed_despite(self, stream: Stream, checkpoint: CheckpointPlan, marker: CommitMarker,
                        exc: Exception) -> tuple[CommitResult | None, Exception]:
        """Whether the checkpoint's commit landed although its commit raised ``exc``: the
        commit found by its marker (then it counts as committed), or None and the error
        the checkpoint failed with (``exc``, or that the lookup raised too: the outcome
        is unknown).

        Why the engine looks, though a destination looks its own commit up when it
        raises: an error can come after the destination's answer (the answer lost on
        its way back, anything the engine does after it), and a checkpoint called
        failed has its quarantined rows deleted and its files dropped, and its windows
        read again by the next run, while its rows are in the table.  Not for an
        error that says nothing was done (the outcome is already unknown, the store
        behind the table, the credentials, the config, a schema contract or an
        expectation refused it).
        """
        if _unknown_in(exc) is not None or isinstance(headwater_error_from(exc), _REFUSALS):
            return None, exc
        try:
            found = self._found_commit(stream, checkpoint, marker)
        except StoreBehindTableError as behind:
            return None, behind
        except Exception as lookup:
            return None, _lookup_failed(lookup, marker, after=exc)
        if found is None:
            return None, exc
        log.warning("stream %s checkpoint %s: its commit raised (%s), and its marker is in "
                    "the table%s, so it counts as committed", self.name, checkpoint.index,
                    describe_error(exc), f" at {self.commit_id} {found.version}"
                    if found.version is not None else "")
        return replace(found, already_committed=False,
                       writer_reason="the commit landed, then raised; found by its marker"), exc

    def _found_commit(self, stream: Stream, checkpoint: CheckpointPlan,
                      marker: CommitMarker) -> CommitResult | None:
        """The checkpoint's commit (or staging), found by its marker; None when absent."""
        earlier = self.route.find(self.spark, self.plan, marker)
        if earlier is None:
            return None
        earlier = self._with_recorded_counts(checkpoint, earlier)
        if self._keeps_state(stream) and not earlier.partition_states:
            earlier = replace(earlier, partition_states=self.store.staged_partition_states(
                self.run_id, self.name, checkpoint.index))
        return earlier

    def _commit(self, stream: Stream, checkpoint: CheckpointPlan,
                marker: CommitMarker) -> CommitResult:
        """Read the checkpoint and commit it (or stage it) through the stream's route."""
        keeps_state = self._keeps_state(stream)
        route = self.route
        collector = self._collector(checkpoint, keeps_state)
        # Without an accumulator (Spark Connect) the states ride in the rows instead.
        in_rows = keeps_state and collector is None
        # Expectations Spark evaluates see the typed rows; the files are written after them.
        in_spark = self.checks is not None and not self.checks.in_task
        rows = self._rows(stream, checkpoint, collector, carries_state=in_rows,
                          reports_state=keeps_state and not in_rows,
                          writer=None if in_spark else route.writer)
        quarantine, always = self._quarantine_commit(checkpoint, marker)
        states = None
        if keeps_state:
            # What an attempt whose commit never happened staged must not be released.
            self.store.clear_partition_states(self.run_id, self.name, checkpoint.index)
        if in_rows:
            rows, states = split_state_rows(rows)
            marker = replace(marker, partition_states=states)
        try:
            if self.checks is None:
                result = route.commit(self.spark, self.plan, checkpoint, rows, marker)
            else:
                checks = self.checks
                result = checks.commit(
                    self.spark, checkpoint, rows,
                    lambda kept: route.commit(self.spark, self.plan, checkpoint,
                                              checks.written_by(kept, route.writer), marker),
                    quarantine, always_quarantine=always)
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

    def _quarantine_commit(self, checkpoint: CheckpointPlan, marker: CommitMarker,
                           ) -> tuple[Callable[[DataFrame], object] | None, bool]:
        """How the checkpoint's quarantined rows (or the files the tasks wrote of them)
        are committed to the quarantine table, before the checkpoint's own commit; and
        whether that commit runs even when no row was quarantined (a replay replaces
        the replayed run's; a destination removes what it made ready for the tasks)."""
        table, checks = self.quarantine, self.checks
        if table is None or checks is None:
            return None, False
        always = self.replay_of is not None
        if checks.splits:  # one job writes both tables, before either commit
            self.engine.destination.before_task_files(self.spark, self.plan, checkpoint,
                                                      marker)
            always = table.before_job(self.spark, checkpoint, marker) or always

        def commit(rows: DataFrame) -> CommitResult:
            return table.commit(self.spark, checkpoint,
                                checks.written_by(rows, table.writer, table.rows_schema), marker)

        return commit, always

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

    def _recorded_stats(self, checkpoint: CheckpointPlan) -> dict[str, Any] | None:
        """The figures the store recorded for the checkpoint (by an earlier attempt)."""
        return next((record.stats for record in self.store.list_checkpoints(self.run_id)
                     if record.stream == self.name and record.index == checkpoint.index),
                    None)

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
                              carries_state=carries_state, reports_state=reports_state,
                              contract=self.row_contract,
                              progress=(self.live.address(self.name, checkpoint.index)
                                        if self.live is not None else None))
        split = (self.quarantine.split_writer(writer)
                 if self.quarantine is not None and self.checks is not None
                 and self.checks.splits else None)
        output = (context.output_schema if writer is None
                  else split.schema if split is not None else writer.schema)
        spark_schema = from_arrow_schema(_nullable(output))
        count = len(checkpoint.partitions)
        if count == 0:
            return self.spark.createDataFrame([], spark_schema)
        sink = collector.sink if collector else None
        # A stream Spark reads itself (JDBC) hands its frame over; the rest are read
        # by their ``read`` on the executors, one input row per partition.
        source = stream.spark_frame(self.spark, checkpoint.partitions)
        if source is not None:
            task = make_frame_task(stream, checkpoint.partitions, context, sink)
        else:
            tasks = task_count(stream, count, self._slots[checkpoint.index])
            source = self.spark.range(0, count, 1, numPartitions=tasks)
            task = make_task(stream, interleaved(checkpoint.partitions, tasks), context, sink)
        if split is not None and self.checks is not None:
            # The tasks write the kept rows and the quarantined ones (``_quarantine``).
            return source.mapInArrow(self.checks.wrap_split(self.spark, checkpoint, task,
                                                            split), spark_schema)
        if self.checks is not None and self.checks.in_task:
            task = self.checks.wrap(self.spark, checkpoint, task)
        return source.mapInArrow(task if writer is None else writer.around(task),
                                 spark_schema)

    def _committed(self, checkpoint: CheckpointPlan, result: CommitResult,
                   duration: float, *, found_committed: bool = False) -> None:
        emit("after-commit")
        stats: dict[str, Any] = {
            "attempt": self.attempt,
            "records_read": result.rows,
            "records_written": result.rows,
            "records_rejected": result.rejected,
            "bytes": result.bytes,
            "duration_s": round(duration, 3),
            self.commit_id: result.version,
            "already_committed": result.already_committed,
            # Found by its marker before reading (``_earlier_commit``): nothing read again.
            "found_committed": found_committed,
            "writer": result.writer,
            "writer_reason": result.writer_reason,
            "partitions": [p.id for p in checkpoint.partitions],
        }
        if self.staged:
            stats["staged"] = True  # durable, not visible: the run's publish shows it
        if self.checks is not None:
            stats.update(self.checks.stats_of(checkpoint, self._recorded_stats(checkpoint)
                                              if result.already_committed else None))
        with self._lock:
            collector = self._collectors.pop(checkpoint.index, None)
        discarded, reasons = 0, dict[str, int]()
        if collector is not None and not result.already_committed:
            stats["partition_stats"] = collector.stats(checkpoint.partitions)
            discarded, reasons = collector.discards(checkpoint.partitions)
            if discarded:
                stats["records_discarded"] = discarded
                stats["discarded"] = reasons
        self.store.record_checkpoint(self.run_id, self.name, checkpoint.index,
                                     checkpoint.checkpoint_id, status="committed", stats=stats)
        with self._lock:
            for partition in checkpoint.partitions:
                if partition.id in result.partition_states:
                    self.cursor.observe_state(partition, result.partition_states[partition.id])
                self.cursor.close_partition(partition)
            self.stats.records_read += int(stats["records_read"])
            add_counts(self.stats.expectations, stats.get(STATS_KEY))
            self.stats.records_written += result.rows
            self.stats.records_rejected += result.rejected
            self.stats.bytes += result.bytes
            self.stats.records_discarded += discarded
            for reason, count in reasons.items():
                self.stats.discarded[reason] = self.stats.discarded.get(reason, 0) + count
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
                emit("after-release")
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


def _nullable(schema: pa.Schema) -> pa.Schema:
    import pyarrow as pa

    return pa.schema([f.with_nullable(True) for f in schema])


#: The key of a failed checkpoint's figures that says its commit's outcome is unknown.
OUTCOME_UNKNOWN = "outcome_unknown"


#: Errors saying the checkpoint's commit was refused or never attempted (nothing landed).
_REFUSALS = (StoreBehindTableError, AuthenticationError, SchemaContractError, ExpectationFailed,
             ConfigError)


def _unknown_in(exc: BaseException) -> CommitOutcomeUnknown | None:
    """The :class:`CommitOutcomeUnknown` ``exc`` is or was raised from, if any."""
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        if isinstance(current, CommitOutcomeUnknown):
            return current
        chain.append(current)
        current = current.__cause__ or current.__context__
    return None


def _lookup_failed(exc: BaseException, marker: CommitMarker, *,
                   after: BaseException | None = None) -> CommitOutcomeUnknown:
    """The lookup of the checkpoint's commit by its marker raised ``exc``: a resumed
    attempt's, of an earlier attempt's commit; or, ``after``, of the commit that raised
    ``after``."""
    if after is None:
        what = (f"looking up whether an earlier attempt committed checkpoint "
                f"{marker.checkpoint_index}")
        error, lookup = describe_error(exc), None
    else:
        what = f"the commit of checkpoint {marker.checkpoint_index}"
        error, lookup = describe_error(after), describe_error(exc)
    found = headwater_error_from(exc)
    if isinstance(found, AuthenticationError):
        context = {k: v for k, v in found.context.items() if k not in ("stream", "checkpoint")}
        return RefusedCommitOutcomeUnknown(what, error=error, lookup=lookup,
                                           stream=marker.stream,
                                           checkpoint=marker.checkpoint_index, **context)
    return CommitOutcomeUnknownError(what, error=error, lookup=lookup, stream=marker.stream,
                                     checkpoint=marker.checkpoint_index)


def describe_error(exc: BaseException) -> str:
    unknown = _unknown_in(exc)
    if unknown is not None:
        return str(unknown)
    found = headwater_error_from(exc)  # also a connector's error that Spark wrapped
    if found is not None:
        return str(found)
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"


__all__ = ["OUTCOME_UNKNOWN", "StreamRunner", "describe_error"]
