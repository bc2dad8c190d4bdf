"""What each Spark task of a Kafka commit runs: its rows, in Kafka transactions.

Why one transaction per unit (a source partition, or a key bucket of an
``append_dedup`` checkpoint) and not per task: a transaction stays as short as
one unit's read (it must end within ``transaction.timeout.ms``), and a retried
task resumes after the last unit it landed.  Each transaction holds the unit's
records and the task's marker (``_markers.task_value``: every unit of this
checkpoint the task has landed), so the records and the fact that they landed
become visible together, or not at all.

A task starts with ``init_transactions`` under a transactional.id stable across
attempts (lane and task index): a zombie of an earlier attempt is fenced and
its open transaction aborted.  Then it reads its own marker, read committed,
and skips every unit it (or, as the driver tells it, any task) already landed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from headwater.destinations.kafka import _records
from headwater.destinations.kafka._client import TIMEOUT_S, describe, producer_settings
from headwater.destinations.kafka._markers import (
    Unit,
    landed_units,
    read_markers,
    task_key,
    task_value,
    transactional_id,
)

if TYPE_CHECKING:
    from headwater.destinations._base import CommitMarker
    from headwater.destinations.kafka._config import KafkaSettings

_UNIT = _records.UNIT_AT
#: One row per unit the task handled.
RESULT_SCHEMA = pa.schema([("task", pa.int32()), ("unit", pa.string()), ("rows", pa.int64()),
                           ("rejected", pa.int64()), ("bytes", pa.int64()),
                           ("earlier", pa.bool_())])
#: The same, as Spark's ``mapInArrow`` takes it.
RESULT_DDL = "task int, unit string, rows long, rejected long, bytes long, earlier boolean"


@dataclass(frozen=True)
class ProduceTask:
    """The function ``mapInArrow`` runs over a prepared frame (``_records.prepare``).

    Plain values only: pickled to the executors.
    """

    settings: KafkaSettings
    topic: str
    marker: CommitMarker
    #: Units any task of an earlier attempt landed (the driver read them).
    landed: frozenset[str] = field(default_factory=frozenset)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext

        context = TaskContext.get()
        task = context.partitionId() if context is not None else 0
        yield _Producing(self, task).run(batches)


class _Producing:
    """One task attempt: a transactional producer, a transaction per unit."""

    def __init__(self, job: ProduceTask, task: int) -> None:
        from confluent_kafka import Producer

        self.job, self.task = job, task
        self.errors: list[Any] = []
        marker = job.marker
        self.producer = Producer({**producer_settings(job.settings,
                                                      transactional_id(marker.app_id, task)),
                                  "error_cb": self.errors.append})
        self.constants = (marker.stream, marker.run_id, str(marker.checkpoint_index))
        self.done: dict[str, Unit] = {}
        #: The unit whose transaction is open, and its figures (rows, rejected, bytes).
        self.open: tuple[str, list[int]] | None = None
        self.results: list[tuple[str, Unit, bool]] = []

    def run(self, batches: Iterator[pa.RecordBatch]) -> pa.RecordBatch:
        from confluent_kafka import KafkaException

        job = self.job
        try:
            self.producer.init_transactions(TIMEOUT_S * 4)
        except KafkaException as exc:
            raise describe(exc, job.settings, f"starting task {self.task}'s transactions",
                           self.errors, topic=job.topic) from exc
        # After init_transactions every earlier transaction of this id is decided.
        own = read_markers(job.settings, task_key(job.marker.app_id, self.task))
        self.done = landed_units(own, job.marker, self.task)
        skip = set(job.landed) | set(self.done)
        for unit in sorted(self.done):
            self.results.append((unit, self.done[unit], True))
        try:
            for batch in batches:
                units = batch.column(_UNIT)
                for begin, end in _runs(units):
                    unit = str(units[begin].as_py())
                    if self.open is not None and self.open[0] != unit:
                        self._finish()
                    if unit in skip:
                        if unit not in self.done and all(r[0] != unit for r in self.results):
                            self.results.append((unit, Unit(), True))
                        continue
                    if self.open is None:
                        self.producer.begin_transaction()
                        self.open = (unit, [0, 0, 0])
                    self._produce(batch.slice(begin, end - begin), unit)
            if self.open is not None:
                self._finish()
        except BaseException:
            if self.open is not None:
                # Fenced or gone: the broker aborts it anyway.
                with contextlib.suppress(Exception):
                    self.producer.abort_transaction(TIMEOUT_S)
            raise
        return pa.RecordBatch.from_pylist(
            [{"task": self.task, "unit": unit, "rows": f.rows, "rejected": f.rejected,
              "bytes": f.bytes, "earlier": earlier} for unit, f, earlier in self.results],
            schema=RESULT_SCHEMA)

    def _produce(self, rows: pa.RecordBatch, unit: str) -> None:
        """Hand one unit's rows to the producer (the hot loop: headers built as
        ``_records.headers`` builds them, from constant parts)."""
        assert self.open is not None
        figures = self.open[1]
        values, notes = rows.column(_records.VALUE_AT), rows.column(_records.NOTES_AT)
        figures[0] += rows.num_rows
        figures[1] += rows.num_rows - notes.null_count
        figures[2] += int(pc.sum(pc.binary_length(values)).as_py() or 0)
        stream, run_id, checkpoint = self.constants
        produce, poll, topic = self.producer.produce, self.producer.poll, self.job.topic
        first = (_records.H_STREAM, stream)
        where = (_records.H_PARTITION, unit)
        last = [(_records.H_RUN, run_id), (_records.H_CHECKPOINT, checkpoint)]
        for key, value, record, note in zip(rows.column(_records.KEY_AT).to_pylist(),
                                            values.to_pylist(),
                                            rows.column(_records.RECORD_AT).to_pylist(),
                                            notes.to_pylist(), strict=True):
            headers = [first, where, (_records.H_RECORD, record), *last]
            if note is not None:
                headers.append((_records.H_NOTES, note))
            while True:
                try:
                    produce(topic, value, key, headers=headers)
                    break
                except BufferError:  # the local queue is full: let deliveries drain it
                    poll(0.05)

    def _finish(self) -> None:
        """Close the open unit's transaction with the task's marker: the commit point."""
        from confluent_kafka import KafkaException

        assert self.open is not None
        job = self.job
        unit, figures = self.open
        self.open = None
        landed = Unit(rows=figures[0], rejected=figures[1], bytes=figures[2])
        self.done[unit] = landed
        self.producer.produce(job.settings.markers_topic,
                              key=task_key(job.marker.app_id, self.task),
                              value=task_value(job.marker, self.done))
        try:
            self.producer.commit_transaction(TIMEOUT_S * 4)
        except KafkaException as exc:
            raise describe(exc, job.settings, f"committing task {self.task}'s records of "
                           f"partition {unit}", self.errors, topic=job.topic) from exc
        self.results.append((unit, landed, False))


def _runs(units: pa.Array) -> list[tuple[int, int]]:
    """``[begin, end)`` of each run of equal values in ``units`` (a unit's rows are
    contiguous: a task reads its partitions one after the other)."""
    length = len(units)
    if length == 0:
        return []
    changed = pc.not_equal(units.slice(1), units.slice(0, length - 1))
    starts = [0, *[i + 1 for i in pc.indices_nonzero(changed).to_pylist()]]
    return list(zip(starts, [*starts[1:], length], strict=True))


def figures_of(rows: list[dict[str, Any]]) -> dict[str, Unit]:
    """The units a commit's job reported, by unit (the latest report of a unit wins)."""
    return {str(r["unit"]): Unit(rows=int(r["rows"]), rejected=int(r["rejected"]),
                                 bytes=int(r["bytes"])) for r in rows}


__all__ = ["RESULT_DDL", "RESULT_SCHEMA", "ProduceTask", "figures_of"]
