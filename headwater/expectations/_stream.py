"""What a stream's run asks of its expectations: check each checkpoint on its way to
the destination, and keep each checkpoint's counts until its record is written.

The stream runner (:mod:`headwater.engine._stream_runner`) calls
:meth:`StreamChecks.commit` around its route's commit, and
:meth:`StreamChecks.stats_of` when it records the checkpoint.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from headwater.expectations._arrow import ArrowTask, CountsParam, TaskChecks, compile_check
from headwater.expectations._checks import CheckpointCounts, StreamExpectations
from headwater.expectations._config import ExpectationConfig
from headwater.expectations._quarantine import (
    quarantine_location,
    remove_quarantined,
    write_quarantine,
)

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark import Accumulator
    from pyspark.sql import DataFrame, SparkSession

    from headwater.config import ConnectionConfig
    from headwater.destinations import Destination
    from headwater.destinations._base import CommitMarker, CommitResult, FileWriter
    from headwater.plan import CheckpointPlan, StreamPlan

log = logging.getLogger(__name__)

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
    written as without expectations; else in Spark (:mod:`._checks`).
    """

    def __init__(self, checks: StreamExpectations, destination: Destination,
                 rows_run_id: str, task_checks: TaskChecks | None = None,
                 output_schema: pa.Schema | None = None) -> None:
        self.checks = checks
        self.destination = destination
        #: The run id the rows carry (a replay's: the replayed run's).
        self.rows_run_id = rows_run_id
        self._task_checks = task_checks
        self._output_schema = output_schema
        self._counts: dict[int, CheckpointCounts] = {}
        self._accumulators: dict[int, Accumulator[dict[str, list[int]]]] = {}
        self._lock = threading.Lock()

    @property
    def in_task(self) -> bool:
        return self._task_checks is not None

    @classmethod
    def start(cls, spark: SparkSession, destination: Destination, plan: StreamPlan,
              expectations: Sequence[ExpectationConfig], data_schema: pa.Schema, *,
              rows_run_id: str) -> StreamChecks | None:
        """The stream's checks, confirmed by Spark's analyzer on the rows' columns (the
        metadata columns and ``data_schema``): a :class:`~headwater.errors.ConfigError`
        before anything is read.  None when the stream has no expectations."""
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
        if _has_context(spark) and not checks.quarantines and all(
                compile_check(e.expr, columns) is not None for e in expectations):
            task_checks = TaskChecks(plan.stream.name,
                                     tuple((e.name, e.action, e.expr) for e in expectations),
                                     checks.secret_columns)
        return cls(checks, destination, rows_run_id, task_checks, columns)

    def wrap(self, spark: SparkSession, checkpoint: CheckpointPlan, task: ArrowTask) -> ArrowTask:
        """``task`` with the checks run on its batches (``in_task`` only)."""
        assert self._task_checks is not None and self._output_schema is not None
        counts: Accumulator[dict[str, list[int]]] = spark.sparkContext.accumulator(
            {}, CountsParam())  # type: ignore[arg-type]
        with self._lock:
            self._accumulators[checkpoint.index] = counts
        return self._task_checks.around(task, counts, self._output_schema)

    def commit(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
               rows: DataFrame, marker: CommitMarker,
               commit: Callable[[DataFrame], CommitResult]) -> CommitResult:
        """Check ``rows``, quarantine, then ``commit`` the rows kept (see ``_checks``);
        ``in_task``: commit them (the tasks check them) and take the tasks' counts."""
        if self.in_task:
            result = commit(rows)
            with self._lock:
                counts = self._accumulators.pop(checkpoint.index, None)
            if counts is not None and not result.already_committed:
                self._keep(checkpoint, self._task_counts(counts.value))
            return result
        quarantine = None
        if self.checks.quarantines:
            quarantine = partial(write_quarantine,
                                 location=quarantine_location(self.destination, plan.stream.name),
                                 marker=marker, run_id=self.rows_run_id,
                                 partitions=[p.id for p in checkpoint.partitions])
        result, found = self.checks.commit(rows, commit, quarantine)
        self._keep(checkpoint, found)
        return result

    def written_by(self, kept: DataFrame, writer: FileWriter | None) -> DataFrame:
        """The rows Spark's checks kept, written to files by ``writer``'s tasks (the rows
        describing the files), as the tasks that read them would have; ``kept`` itself
        when the destination takes rows, or ``in_task`` (the tasks that read wrote the
        files).  The destination then commits (or stages) the files as it does
        without expectations, and publishes them alike."""
        if writer is None or self.in_task:
            return kept
        from pyspark.sql.pandas.types import from_arrow_schema

        assert self._output_schema is not None
        return kept.mapInArrow(writer.around(_typed_as(self._output_schema)),
                               from_arrow_schema(writer.schema))

    def _keep(self, checkpoint: CheckpointPlan, counts: CheckpointCounts) -> None:
        with self._lock:
            self._counts[checkpoint.index] = counts

    def _task_counts(self, figures: Mapping[str, list[int]]) -> CheckpointCounts:
        names = [e.name for e in self.checks.expectations]
        totals = [sum(column) for column in zip(*figures.values(), strict=True)] \
            if figures else [0] * (len(names) + 2)
        return CheckpointCounts(evaluated=totals[0],
                                failed=dict(zip(names, totals[1:-1], strict=True)),
                                removed=totals[-1])

    def abort(self, spark: SparkSession, plan: StreamPlan,
              checkpoints: Sequence[CheckpointPlan]) -> None:
        """Delete what ``checkpoints`` (failed before their commits) quarantined."""
        if not self.checks.quarantines or not checkpoints:
            return
        try:
            remove_quarantined(spark, quarantine_location(self.destination, plan.stream.name),
                               self.rows_run_id,
                               [p.id for c in checkpoints for p in c.partitions])
        except Exception as exc:
            log.warning("stream %s: the quarantined rows of failed checkpoints %s could not "
                        "be removed (%s: %s); the next run may quarantine them again",
                        plan.stream.name, [c.index for c in checkpoints],
                        type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")

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


def _typed_as(schema: pa.Schema) -> ArrowTask:
    """A task that hands on its input batches in the types of ``schema`` (Spark's Arrow
    may differ from the table's: a timestamp's zone, a nullability)."""
    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        for batch in batches:
            yield pa.RecordBatch.from_arrays(
                [batch.column(field.name).cast(field.type) for field in schema],
                schema=schema)

    return run


def _has_context(spark: SparkSession) -> bool:
    """Whether the session has a SparkContext (and so accumulators): not Spark Connect."""
    try:
        spark.sparkContext  # noqa: B018 (raises under Spark Connect)
    except Exception:
        return False
    return True


__all__ = ["STATS_KEY", "StreamChecks", "configured_expectations"]
