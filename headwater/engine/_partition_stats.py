"""Per-partition figures of one checkpoint, counted on the executors that read them.

Each Spark task knows which partition it is reading, so it counts that
partition's records, rejected records (rows whose ``_hw_notes`` say a value
did not fit), output bytes (Arrow buffer size of the rows handed to Spark, not
the compressed size on disk), seconds spent, and which task attempt it is
(``attempt - 1`` earlier attempts of the task failed: the partition's retries).
The figures travel back with the task's result as a Spark accumulator, which
Spark merges once per *successful* task of an action, so a retried task is
not counted twice.

Accumulators need the classic JVM-backed session: under Spark Connect
:meth:`PartitionStatsCollector.start` returns ``None`` and the run records
per-checkpoint figures only.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from headwater.sdk import Partition

if TYPE_CHECKING:
    from pyspark import Accumulator
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

#: ``{partition id: {"records", "rejected", "bytes", "duration_s", "attempt"}}``
PartitionFigures = dict[str, dict[str, Any]]


class _FiguresParam:
    """Merges per-partition figures; a partition read twice in one task adds up.

    Duck-typed as PySpark's ``AccumulatorParam`` (``zero`` / ``addInPlace``), so
    importing the engine does not import PySpark.
    """

    def zero(self, value: PartitionFigures) -> PartitionFigures:
        return {}

    def addInPlace(self, value1: PartitionFigures,
                   value2: PartitionFigures) -> PartitionFigures:
        for key, figures in value2.items():
            mine = value1.get(key)
            if mine is None:
                value1[key] = dict(figures)
                continue
            for name in ("records", "rejected", "bytes", "duration_s"):
                mine[name] = mine.get(name, 0) + figures.get(name, 0)
            mine["attempt"] = max(mine.get("attempt", 1), figures.get("attempt", 1))
        return value1


class PartitionStatsCollector:
    """One checkpoint's accumulator; ``sink`` goes to the task, ``stats`` is read after."""

    def __init__(self, accumulator: Accumulator[PartitionFigures]) -> None:
        self.sink = accumulator

    @classmethod
    def start(cls, spark: SparkSession) -> PartitionStatsCollector | None:
        try:
            context = spark.sparkContext
        except Exception:  # Spark Connect: no SparkContext, no accumulators
            return None
        return cls(context.accumulator({}, _FiguresParam()))  # type: ignore[arg-type]

    def stats(self, partitions: Sequence[Partition]) -> list[dict[str, Any]]:
        """One row per planned partition, in plan order (zeros for a partition with no rows)."""
        figures = self.sink.value
        rows = []
        for partition in partitions:
            found = figures.get(partition.id, {})
            attempt = int(found.get("attempt", 1))
            rows.append({
                "partition": partition.id,
                "records_read": int(found.get("records", 0)),
                "records_written": int(found.get("records", 0)),
                "records_rejected": int(found.get("rejected", 0)),
                "bytes": int(found.get("bytes", 0)),
                "duration_s": round(float(found.get("duration_s", 0.0)), 3),
                "retries": attempt - 1,
            })
        return rows


def task_attempt() -> int:
    """1 for a task's first attempt, 2 for its first retry, ... (1 outside Spark)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    return context.attemptNumber() + 1 if context is not None else 1


__all__ = ["PartitionFigures", "PartitionStatsCollector", "task_attempt"]
