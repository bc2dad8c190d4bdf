"""Per-partition figures of one checkpoint, counted on the executors that read them.

Each Spark task knows which partition it is reading, so it counts that
partition's records, rejected records (rows whose ``_hw_notes`` say a value
did not fit), output bytes (Arrow buffer size of the rows handed to Spark, not
the compressed size on disk), seconds spent, and which task attempt it is
(``attempt - 1`` earlier attempts of the task failed: the partition's retries).
The figures travel back with the task's result as a Spark accumulator, which
Spark merges once per *successful* task of an action, so a retried task is
not counted twice.

The same accumulator carries a connector's own state (``Stream.keeps_own_state``)
to the driver, under the key ``"state"``.  Spark hands a task's accumulator
update to the driver's Python process and waits for its acknowledgement
before it counts the task as done, so the whole job, and therefore the
commit that follows it, waits too.  :class:`_StagingFiguresParam` writes the
states to the metadata store before acknowledging: when the commit exists,
so do its states (see :mod:`headwater.engine._own_state`).

Accumulators need the classic JVM-backed session: under Spark Connect
:meth:`PartitionStatsCollector.start` returns ``None`` and the run records
per-checkpoint figures only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from headwater.sdk import Partition

if TYPE_CHECKING:
    from pyspark import Accumulator
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

#: ``{partition id: {"records", "rejected", "bytes", "duration_s", "attempt"[, "state"]}}``
PartitionFigures = dict[str, dict[str, Any]]

#: Called on the driver with partition id -> own state before a task counts as done.
StateSink = Callable[[dict[str, dict[str, Any]]], None]


def _own_states(figures: PartitionFigures) -> dict[str, dict[str, Any]]:
    """Partition id -> own state, for the partitions in ``figures`` that carry one."""
    return {key: found["state"] for key, found in figures.items() if "state" in found}


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
            if "discarded" in figures:  # rows a schema contract kept out
                mine["discarded"] = mine.get("discarded", 0) + figures["discarded"]
            for reason, count in figures.get("discard_reasons", {}).items():
                reasons = mine.setdefault("discard_reasons", {})
                reasons[reason] = reasons.get(reason, 0) + count
            mine["attempt"] = max(mine.get("attempt", 1), figures.get("attempt", 1))
            if "state" in figures:
                mine["state"] = figures["state"]
        return value1


class _StagingFiguresParam(_FiguresParam):
    """The driver's copy: stages each update's own states before Spark gets its ack.

    Runs in PySpark's accumulator server thread.  A failure to stage is kept
    (``error``), not raised: raising would only make Spark log the update as
    lost and go on to commit, and the figures and states would be lost too.
    Executors get a plain :class:`_FiguresParam` (see ``__reduce__``), so the
    sink, which holds the metadata store, never leaves the driver.
    """

    def __init__(self, sink: StateSink) -> None:
        self.sink = sink
        self.error: Exception | None = None

    def __reduce__(self) -> tuple[type[_FiguresParam], tuple[()]]:
        return _FiguresParam, ()

    def addInPlace(self, value1: PartitionFigures,
                   value2: PartitionFigures) -> PartitionFigures:
        merged = super().addInPlace(value1, value2)
        states = _own_states(value2)
        if states:
            try:
                self.sink(states)
            except Exception as exc:  # kept for the engine to report; see the docstring
                log.error("could not stage the connector's state of %s before the commit: %s",
                          ", ".join(sorted(states)), exc)
                self.error = exc
        return merged


class PartitionStatsCollector:
    """One checkpoint's accumulator; ``sink`` goes to the task, ``stats`` is read after."""

    def __init__(self, accumulator: Accumulator[PartitionFigures],
                 param: _FiguresParam) -> None:
        self.sink = accumulator
        self._param = param

    @classmethod
    def start(cls, spark: SparkSession,
              stage_states: StateSink | None = None) -> PartitionStatsCollector | None:
        """A collector, or ``None`` under Spark Connect; ``stage_states`` sees own states."""
        try:
            context = spark.sparkContext
        except Exception:  # Spark Connect: no SparkContext, no accumulators
            return None
        param = _FiguresParam() if stage_states is None else _StagingFiguresParam(stage_states)
        return cls(context.accumulator({}, param), param)  # type: ignore[arg-type]

    def states(self) -> dict[str, dict[str, Any]]:
        """Partition id -> own state of every partition whose read finished."""
        return _own_states(self.sink.value)

    def stop_staging(self) -> None:
        """Stage nothing more: PySpark keeps every accumulator (and so the sink) for good."""
        if isinstance(self._param, _StagingFiguresParam):
            self._param.sink = _ignore

    @property
    def staging_error(self) -> Exception | None:
        """Why an own state could not be staged before the commit, if it could not."""
        return self._param.error if isinstance(self._param, _StagingFiguresParam) else None

    def discards(self, partitions: Sequence[Partition]) -> tuple[int, dict[str, int]]:
        """Rows the schema contract kept out of ``partitions``, and how many per reason."""
        figures = self.sink.value
        total, reasons = 0, dict[str, int]()
        for partition in partitions:
            found = figures.get(partition.id, {})
            total += int(found.get("discarded", 0))
            for reason, count in found.get("discard_reasons", {}).items():
                reasons[reason] = reasons.get(reason, 0) + int(count)
        return total, reasons

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


def _ignore(states: dict[str, dict[str, Any]]) -> None:
    """What a detached staging param does with a late update (a job that is over)."""


def task_attempt() -> int:
    """1 for a task's first attempt, 2 for its first retry, ... (1 outside Spark)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    return context.attemptNumber() + 1 if context is not None else 1


__all__ = ["PartitionFigures", "PartitionStatsCollector", "StateSink", "task_attempt"]
