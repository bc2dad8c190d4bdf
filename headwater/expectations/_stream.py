"""What a stream's run asks of its expectations: check each checkpoint on its way to
the destination, and keep each checkpoint's counts until its record is written.

The stream runner (:mod:`headwater.engine._stream_runner`) calls
:meth:`StreamChecks.commit` around its route's commit, and
:meth:`StreamChecks.stats_of` when it records the checkpoint.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from headwater.expectations._checks import CheckpointCounts, StreamExpectations
from headwater.expectations._config import ExpectationConfig
from headwater.expectations._quarantine import (
    quarantine_location,
    remove_quarantined,
    write_quarantine,
)

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession

    from headwater.config import ConnectionConfig
    from headwater.destinations import Destination
    from headwater.destinations._base import CommitMarker, CommitResult
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
    """One stream's expectations during one attempt of a run."""

    def __init__(self, checks: StreamExpectations, destination: Destination,
                 rows_run_id: str) -> None:
        self.checks = checks
        self.destination = destination
        #: The run id the rows carry (a replay's: the replayed run's).
        self.rows_run_id = rows_run_id
        self._counts: dict[int, CheckpointCounts] = {}
        self._lock = threading.Lock()

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

        columns = pa.schema([f.with_nullable(True) for f in [*META_FIELDS, *data_schema]])
        checks = StreamExpectations(plan.stream.name, expectations, plan.json_schema)
        checks.analyse(spark, from_arrow_schema(columns))
        return cls(checks, destination, rows_run_id)

    def commit(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
               rows: DataFrame, marker: CommitMarker,
               commit: Callable[[DataFrame], CommitResult]) -> CommitResult:
        """Check ``rows``, quarantine, then ``commit`` the rows kept (see ``_checks``)."""
        quarantine = None
        if self.checks.quarantines:
            quarantine = partial(write_quarantine,
                                 location=quarantine_location(self.destination, plan.stream.name),
                                 marker=marker, run_id=self.rows_run_id,
                                 partitions=[p.id for p in checkpoint.partitions])
        result, counts = self.checks.commit(rows, commit, quarantine)
        with self._lock:
            self._counts[checkpoint.index] = counts
        return result

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
            found = (recorded or {}).get(STATS_KEY)
            return {STATS_KEY: dict(found)} if isinstance(found, Mapping) else {}
        return {STATS_KEY: counts.to_stats(self.checks.actions),
                "records_read": counts.evaluated}


__all__ = ["STATS_KEY", "StreamChecks", "configured_expectations"]
