"""What a stream's run asks of its expectations: check each checkpoint on its way to
the destination, and keep each checkpoint's counts until its record is written.

The stream runner (:mod:`headwater.engine._stream_runner`) calls
:meth:`StreamChecks.commit` around its route's commit (and its quarantine table's,
:mod:`headwater.engine._quarantine`), and :meth:`StreamChecks.stats_of` when it
records the checkpoint.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from headwater._events import emit
from headwater.expectations._arrow import ArrowTask, CountsParam, TaskChecks, compile_check
from headwater.expectations._checks import CheckpointCounts, StreamExpectations
from headwater.expectations._config import ExpectationConfig
from headwater.expectations._split import SplitWriter, split_files, typed_as

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark import Accumulator
    from pyspark.sql import DataFrame, SparkSession

    from headwater.config import ConnectionConfig
    from headwater.destinations._base import CommitResult, FileWriter
    from headwater.plan import CheckpointPlan, StreamPlan

#: The key of a checkpoint's figures (and a stream's) that holds its expectations' counts.
STATS_KEY = "expectations"


def configured_expectations(connection: ConnectionConfig,
                            stream: str) -> list[ExpectationConfig]:
    """The expectations the connection file gives ``stream`` (none when it lists none)."""
    for configured in connection.streams or ():
        if configured.name == stream:
            return list(configured.expectations)
    return []


class StreamChecks:
    """One stream's expectations during one attempt of a run.

    ``in_task``: evaluated inside the Python tasks (:mod:`._arrow`), the rows
    written as without expectations (and the quarantined ones, by the same tasks,
    through the quarantine table's writer: :mod:`._split`); else in Spark
    (:mod:`._checks`).
    """

    def __init__(self, checks: StreamExpectations, task_checks: TaskChecks | None = None,
                 output_schema: pa.Schema | None = None) -> None:
        self.checks = checks
        self._task_checks = task_checks
        self._output_schema = output_schema
        self._counts: dict[int, CheckpointCounts] = {}
        self._accumulators: dict[int, Accumulator[dict[str, list[int]]]] = {}
        self._lock = threading.Lock()

    @property
    def in_task(self) -> bool:
        return self._task_checks is not None

    @property
    def splits(self) -> bool:
        """Whether the tasks write the quarantined rows too (:mod:`._split`)."""
        return self.in_task and self.checks.quarantines

    @classmethod
    def start(cls, spark: SparkSession, plan: StreamPlan,
              expectations: Sequence[ExpectationConfig], data_schema: pa.Schema, *,
              tasks_write_both: bool = False) -> StreamChecks | None:
        """The stream's checks, confirmed by Spark's analyzer on the rows' columns (the
        metadata columns and ``data_schema``): a :class:`~headwater.errors.ConfigError`
        before anything is read.  None when the stream has no expectations.

        ``tasks_write_both``: the tasks write the stream's rows and its quarantine
        table's (both have writers), so a quarantine may be evaluated in the tasks."""
        if not expectations:
            return None
        import pyarrow as pa
        from pyspark.sql.pandas.types import from_arrow_schema

        from headwater.table_schema import META_FIELDS

        columns = pa.schema([*META_FIELDS, *data_schema])
        checks = StreamExpectations(plan.stream.name, expectations, plan.json_schema)
        checks.analyse(spark, from_arrow_schema(
            pa.schema([f.with_nullable(True) for f in columns])))
        task_checks = None
        quarantines_in_task = not checks.quarantines or tasks_write_both
        if _has_context(spark) and quarantines_in_task and all(
                compile_check(e.expr, columns) is not None for e in expectations):
            task_checks = TaskChecks(plan.stream.name,
                                     tuple((e.name, e.action, e.expr) for e in expectations),
                                     checks.secret_columns)
        return cls(checks, task_checks, columns)

    def _counts_of(self, spark: SparkSession,
                   checkpoint: CheckpointPlan) -> Accumulator[dict[str, list[int]]]:
        counts: Accumulator[dict[str, list[int]]] = spark.sparkContext.accumulator(
            {}, CountsParam())  # type: ignore[arg-type]
        with self._lock:
            self._accumulators[checkpoint.index] = counts
        return counts

    def wrap(self, spark: SparkSession, checkpoint: CheckpointPlan, task: ArrowTask) -> ArrowTask:
        """``task`` with the checks run on its batches (``in_task`` only)."""
        assert self._task_checks is not None and self._output_schema is not None
        return self._task_checks.around(task, self._counts_of(spark, checkpoint),
                                        self._output_schema)

    def wrap_split(self, spark: SparkSession, checkpoint: CheckpointPlan, task: ArrowTask,
                   writer: SplitWriter) -> ArrowTask:
        """``task`` checked, its kept rows and its quarantined rows written by ``writer``
        (``splits`` only): one row per file (or COPY) of either table comes out."""
        task_checks, schema = self._task_checks, self._output_schema
        assert task_checks is not None and schema is not None
        counts = self._counts_of(spark, checkpoint)
        return writer.around(
            lambda quarantined: task_checks.around(task, counts, schema, quarantined))

    def commit(self, spark: SparkSession, checkpoint: CheckpointPlan, rows: DataFrame,
               commit: Callable[[DataFrame], CommitResult],
               quarantine: Callable[[DataFrame], object] | None = None, *,
               always_quarantine: bool = False) -> CommitResult:
        """Check ``rows``, ``quarantine`` what a quarantine expectation fails, then
        ``commit`` the rows kept (see ``_checks``); ``in_task``: the tasks checked them
        (and, ``splits``, wrote both tables' files: the quarantine table's are committed
        first), and the counts are the tasks'.  ``always_quarantine``: call
        ``quarantine`` even when no row is quarantined (a replay replaces what the
        replayed run quarantined; a destination's commit removes what it made ready
        for the tasks)."""
        if self.in_task:
            if self.splits:
                rows, held, any_held = split_files(spark, rows)
                if quarantine is not None and (any_held or always_quarantine):
                    quarantine(held)
                    emit("after-quarantine")
            try:
                result = commit(rows)
            except Exception:
                # It may have landed nonetheless: the engine looks it up, and counts
                # the checkpoint with these figures if so (else nothing asks for them).
                self._keep_task_counts(checkpoint)
                raise
            if result.already_committed:
                with self._lock:
                    self._accumulators.pop(checkpoint.index, None)
            else:
                self._keep_task_counts(checkpoint)
            return result
        result, _ = self.checks.commit(rows, commit, quarantine,
                                       always_quarantine=always_quarantine,
                                       counted=lambda found: self._keep(checkpoint, found))
        return result

    def written_by(self, rows: DataFrame, writer: FileWriter | None,
                   schema: pa.Schema | None = None) -> DataFrame:
        """The rows Spark's checks kept (or quarantined: ``schema``, the quarantine
        table's rows), written to files by ``writer``'s tasks (the rows describing the
        files), as the tasks that read them would have; ``rows`` themselves when the
        destination takes rows, or ``in_task`` (the tasks that read wrote the files).
        The destination then commits (or stages) the files as it does without
        expectations, and publishes them alike."""
        if writer is None or self.in_task:
            return rows
        from pyspark.sql.pandas.types import from_arrow_schema

        written = schema or self._output_schema
        assert written is not None
        return rows.mapInArrow(writer.around(lambda batches: typed_as(written, batches)),
                               from_arrow_schema(writer.schema))

    def _keep(self, checkpoint: CheckpointPlan, counts: CheckpointCounts) -> None:
        with self._lock:
            self._counts[checkpoint.index] = counts

    def _keep_task_counts(self, checkpoint: CheckpointPlan) -> None:
        """Keep the figures the checkpoint's tasks counted, for its record (``stats_of``)."""
        with self._lock:
            counts = self._accumulators.pop(checkpoint.index, None)
        if counts is not None:
            self._keep(checkpoint, self._task_counts(counts.value))

    def _task_counts(self, figures: Mapping[str, list[int]]) -> CheckpointCounts:
        names = [e.name for e in self.checks.expectations]
        totals = [sum(column) for column in zip(*figures.values(), strict=True)] \
            if figures else [0] * (len(names) + 2)
        return CheckpointCounts(evaluated=totals[0],
                                failed=dict(zip(names, totals[1:-1], strict=True)),
                                removed=totals[-1])

    def stats_of(self, checkpoint: CheckpointPlan,
                 recorded: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """What the checkpoint's record adds: its counts, and ``records_read`` (the rows
        evaluated).  A checkpoint an earlier attempt committed keeps the counts that
        attempt recorded (``recorded``, its figures in the store), if any."""
        with self._lock:
            counts = self._counts.pop(checkpoint.index, None)
        if counts is None:
            recorded = recorded or {}
            found = recorded.get(STATS_KEY)
            if not isinstance(found, Mapping):
                return {}
            kept = {STATS_KEY: dict(found)}
            if "records_read" in recorded:
                kept["records_read"] = recorded["records_read"]
            return kept
        return {STATS_KEY: counts.to_stats(self.checks.actions),
                "records_read": counts.evaluated}


def _has_context(spark: SparkSession) -> bool:
    """Whether the session has a SparkContext (and so accumulators): not Spark Connect."""
    try:
        spark.sparkContext  # noqa: B018 (raises under Spark Connect)
    except Exception:
        return False
    return True


__all__ = ["STATS_KEY", "StreamChecks", "configured_expectations"]
