"""What one Spark task does: read partitions with the connector, emit typed Arrow.

This is the hard boundary between connector and engine: the connector's
``Stream.read`` yields Arrow batches or dicts; this module adds the metadata
columns and conforms the data columns to the table schema, on the executor.
Rows never travel through the driver.

Everything here is pickled to executors (by ``mapInArrow``), so it holds only the
stream object, the partitions and a few plain values.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gc
import hashlib
import json
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from headwater._events import task_listeners
from headwater.engine._live_progress import PartitionProgress, ProgressAddress
from headwater.engine._partition_stats import PartitionFigures, task_attempt
from headwater.errors import AuthenticationError, ConnectorError, SchemaContractError
from headwater.schema_contracts import RowContract, Tally
from headwater.sdk import Partition, PartitionState, Stream
from headwater.table_schema import META_FIELDS, RowNotes, batch_from_records, conform_batch

if TYPE_CHECKING:
    from pyspark import Accumulator

#: Dict records are gathered into Arrow batches of this many rows.
DICT_BATCH_ROWS = 10_000

#: Extra column of streams that keep their own state (``Stream.keeps_own_state``)
#: when no accumulator can carry it (Spark Connect): null on every record; one
#: extra row per partition carries ``{"partition": id, "state": ...}`` as JSON.
#: The engine stages the rows, takes the state rows out and commits the rest.
STATE_COLUMN = "_hw_partition_state"


@dataclass(frozen=True)
class TaskContext:
    """Plain values every row of a checkpoint batch carries."""

    run_id: str
    checkpoint_index: int
    data_schema: pa.Schema
    #: Add :data:`STATE_COLUMN` and the per-partition state rows.
    carries_state: bool = False
    #: Hand each partition's own state to the stats accumulator instead.
    reports_state: bool = False
    #: The stream's schema contract on rows (``headwater.schema_contracts``); None: none.
    contract: RowContract | None = None
    #: Where the tasks report records read so far (:mod:`._live_progress`); None: nowhere.
    progress: ProgressAddress | None = None

    @property
    def output_schema(self) -> pa.Schema:
        extra = [pa.field(STATE_COLUMN, pa.string())] if self.carries_state else []
        return pa.schema(META_FIELDS + list(self.data_schema) + extra)


def _partition_digest(partition: Partition) -> str:
    key = f"{partition.stream}\x00{partition.id}".encode()
    return hashlib.blake2b(key, digest_size=8).hexdigest()


def _constant(value: Any, length: int, type_: pa.DataType) -> pa.Array:
    return pa.nulls(length, type_).fill_null(pa.scalar(value, type_))


class _PartitionWriter:
    """Turns one partition's records into output batches with metadata columns."""

    def __init__(self, partition: Partition, context: TaskContext,
                 tally: Tally | None = None) -> None:
        self.partition = partition
        self.context = context
        #: Rows the contract kept out of the partition.
        self.tally = tally or Tally()
        self.extracted_at = dt.datetime.now(dt.UTC)
        self.digest = _partition_digest(partition)
        self.record_number = 0

    def _meta(self, length: int, notes: RowNotes) -> list[pa.Array]:
        numbers = pa.array(np.arange(self.record_number, self.record_number + length,
                                     dtype=np.int64))
        self.record_number += length
        raw_ids = pc.binary_join_element_wise(
            _constant(self.digest, length, pa.string()),
            numbers.cast(pa.string()),
            "-",
        )
        return [
            raw_ids,
            _constant(self.extracted_at, length, META_FIELDS[1].type),
            _constant(self.context.run_id, length, pa.string()),
            _constant(self.partition.id, length, pa.string()),
            _constant(self.context.checkpoint_index, length, pa.int64()),
            notes.array(),
        ]

    def _extra(self, length: int) -> list[pa.Array]:
        return [pa.nulls(length, pa.string())] if self.context.carries_state else []

    def from_batch(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        if self.context.contract is not None:
            batch = self.context.contract.apply_to_batch(batch, self.tally)
        data, notes = conform_batch(batch, self.context.data_schema)
        meta = self._meta(batch.num_rows, notes)
        return pa.RecordBatch.from_arrays(meta + data + self._extra(batch.num_rows),
                                          schema=self.context.output_schema)

    def from_records(self, records: Sequence[Mapping[str, Any]]) -> pa.RecordBatch:
        if self.context.contract is not None:
            records = self.context.contract.apply_to_records(records, self.tally)
        data, notes = batch_from_records(records, self.context.data_schema)
        meta = self._meta(len(records), notes)
        return pa.RecordBatch.from_arrays(meta + data + self._extra(len(records)),
                                          schema=self.context.output_schema)

    def state_row(self, state: PartitionState) -> pa.RecordBatch:
        """The one row that carries the partition's own state (no data, never written)."""
        meta = self._meta(1, RowNotes(1))
        meta[0] = pa.array([f"{self.digest}-state"])
        self.record_number -= 1
        data = [pa.nulls(1, field.type) for field in self.context.data_schema]
        value = json.dumps({"partition": self.partition.id, "state": dict(state.state)})
        return pa.RecordBatch.from_arrays(meta + data + [pa.array([value], pa.string())],
                                          schema=self.context.output_schema)


def read_partition(stream: Stream, partition: Partition, context: TaskContext,
                   tally: Tally | None = None, items: Iterator[Any] | None = None,
                   progress: PartitionProgress | None = None,
                   ) -> Generator[pa.RecordBatch, None, PartitionState | None]:
    """Read one partition and yield output batches (metadata + typed data columns).

    Returns the partition's own state (the last one the stream gave, if any)
    once the read finished.  ``tally`` counts the rows the schema contract kept out.
    ``items``: the partition's records read already (Spark's reader,
    :meth:`Stream.spark_frame`) instead of ``stream.read(partition)``.  ``progress``
    reports the records read so far (handed on, and gathered to be) while it reads.
    """
    writer = _PartitionWriter(partition, context, tally)
    pending: list[Mapping[str, Any]] = []
    if progress is not None:
        progress.count = lambda: writer.record_number + len(pending)
    own_state: PartitionState | None = None
    try:
        stream.lands_in(context.data_schema)  # a bulk reader types for the table's columns
        for item in (stream.read(partition) if items is None else items):
            if isinstance(item, PartitionState):
                own_state = item
            elif isinstance(item, pa.RecordBatch):
                if pending:
                    batch, pending = writer.from_records(pending), []
                    yield batch
                if item.num_rows:
                    yield writer.from_batch(item)
            elif isinstance(item, pa.Table):
                for batch in item.to_batches():
                    yield writer.from_batch(batch)
            else:
                pending.append(item)
                if len(pending) >= DICT_BATCH_ROWS:
                    # ``pending`` emptied as its rows are counted in ``writer``, not after
                    # Spark took them: ``progress`` counts both, and each row once.
                    batch, pending = writer.from_records(pending), []
                    yield batch
        if pending:
            batch, pending = writer.from_records(pending), []
            yield batch
        # Only after the read finished: a read that fails releases no state.
        if own_state is not None and context.carries_state:
            yield writer.state_row(own_state)
        return own_state
    except (ConnectorError, AuthenticationError, SchemaContractError) as exc:
        # Which partition failed, in the error the driver reads back (the run page puts
        # it on that partition, not on every partition of the checkpoint).
        exc.context.setdefault("partition", partition.id)
        raise
    except Exception as exc:
        raise ConnectorError(
            f"reading partition failed: {type(exc).__name__}: {exc}",
            stream=partition.stream, partition=partition.id,
        ) from exc


ArrowTask = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


def make_task(stream: Stream, partitions: Sequence[Partition], context: TaskContext,
              stats: Accumulator[PartitionFigures] | None = None) -> ArrowTask:
    """The function ``mapInArrow`` runs: its input rows are positions in ``partitions``.

    With ``stats``, each partition's figures are added to that accumulator
    when the partition is fully read (see :mod:`._partition_stats`).
    """
    frozen = list(partitions)
    listeners = task_listeners()  # pickled with the task: usually none

    def run(positions: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        freeze_worker_objects()
        try:
            for partition in partitions_in_turn(stream, frozen, positions):
                yield from _one_partition(stream, partition, context, stats, listeners)
        finally:
            stream.task_done()
        for listener in listeners:
            listener("task-read")

    return run


def make_frame_task(stream: Stream, partitions: Sequence[Partition], context: TaskContext,
                    stats: Accumulator[PartitionFigures] | None = None) -> ArrowTask:
    """The function ``mapInArrow`` runs over a stream's own Spark frame
    (:meth:`Stream.spark_frame`): Spark partition ``i`` holds the rows of
    ``partitions[i]``, typed and counted here as :func:`make_task` does a read's."""
    frozen = list(partitions)
    listeners = task_listeners()

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        from pyspark import TaskContext as SparkTaskContext

        spark_task = SparkTaskContext.get()
        assert spark_task is not None, "a frame task runs in a Spark task"
        freeze_worker_objects()
        try:
            partition = frozen[spark_task.partitionId()]
            yield from _one_partition(stream, partition, context, stats, listeners, batches)
        finally:
            stream.task_done()
        for listener in listeners:
            listener("task-read")

    return run


def _one_partition(stream: Stream, partition: Partition, context: TaskContext,
                   stats: Accumulator[PartitionFigures] | None,
                   listeners: Sequence[Callable[[str], None]],
                   items: Iterator[Any] | None = None) -> Iterator[pa.RecordBatch]:
    """One partition's output batches, its figures added to ``stats`` once it is read."""
    for listener in listeners:
        listener("reading")
    tally = Tally()
    with (context.progress.reporting(partition.id, task_attempt())
          if context.progress is not None else contextlib.nullcontext()) as progress:
        batches = read_partition(stream, partition, context, tally, items, progress)
        if stats is None:
            yield from batches
        else:
            yield from _counted(batches, partition.id, stats,
                                report_state=context.reports_state, tally=tally)
    for listener in listeners:
        listener("partition-read")


_worker_objects_frozen = False


def freeze_worker_objects() -> None:
    """Move every object the Python worker holds so far (the modules, classes and
    caches its first task imported) out of the garbage collector's sight, once per
    worker process.

    A full collection walks every tracked object.  In a Spark Python worker that
    has imported pyspark, pyarrow and a connector's client it took 120-170 ms, and
    a task reading 100,000 dict records set off about one per task: while it ran,
    the task's HTTP event loop stood still and its requests in flight ran dry
    (``bench/http_source_pages.py``).  Frozen objects are still freed when their
    reference count drops; only cycles among them are never collected, which
    leaks at most what the first task had unpickled, once per worker.  What tasks
    create later is collected as usual.  (``gc.freeze`` is the standard library's
    tool for this, made for long-lived processes whose start-up objects never die.)
    """
    global _worker_objects_frozen
    if not _worker_objects_frozen:
        gc.freeze()
        _worker_objects_frozen = True


def partitions_in_turn(stream: Stream, partitions: Sequence[Partition],
                       positions: Iterator[pa.RecordBatch]) -> Iterator[Partition]:
    """The partitions a task's input rows point at, in order; before handing one
    over, tell ``stream`` which one it reads after it (:meth:`Stream.reads_next`)."""
    for batch in positions:
        order = batch.column(0).to_pylist()
        for at, position in enumerate(order):
            if at + 1 < len(order):
                stream.reads_next(partitions[order[at + 1]])
            yield partitions[position]


def _counted(batches: Generator[pa.RecordBatch, None, PartitionState | None],
             partition_id: str, stats: Accumulator[PartitionFigures], *,
             report_state: bool = False, tally: Tally | None = None,
             ) -> Iterator[pa.RecordBatch]:
    records = rejected = size = 0
    seconds = 0.0
    started = time.perf_counter()
    while True:
        try:
            batch = next(batches)
        except StopIteration as finished:
            own_state: PartitionState | None = finished.value
            break
        records += batch.num_rows
        notes = batch.column("_hw_notes")
        rejected += batch.num_rows - notes.null_count
        size += batch.nbytes
        seconds += time.perf_counter() - started
        yield batch
        started = time.perf_counter()  # time Spark spends downstream is not the source's
    seconds += time.perf_counter() - started
    figures: dict[str, Any] = {"records": records, "rejected": rejected, "bytes": size,
                               "duration_s": seconds, "attempt": task_attempt()}
    if tally is not None and tally.rows:
        # Rows the schema contract kept out: counted by reason (the run's summary).
        figures["discarded"] = tally.rows
        figures["discard_reasons"] = dict(tally.reasons)
    if report_state and own_state is not None:
        # Only a finished read gets here: a failed one raised above and moves no state.
        figures["state"] = dict(own_state.state)
    stats.add({partition_id: figures})


def stream_slots(stream: Stream, parallelism: int) -> int:
    """The Spark task slots a read of ``stream`` may fill at once: ``parallelism``,
    or fewer for a stream read in runs that caps its tasks
    (:attr:`~headwater.sdk.Stream.max_concurrent_tasks`)."""
    cap = None if stream.one_task_per_partition else stream.max_concurrent_tasks
    return max(1, parallelism if cap is None else min(parallelism, cap))


def task_count(stream: Stream, partitions: int, slots: int) -> int:
    """How many Spark tasks read ``partitions`` partitions of ``stream``: one each, or
    for a stream whose partitions share a task's set-up, a run each on at most
    ``slots`` tasks, the task slots the read can count on
    (:attr:`~headwater.sdk.Stream.one_task_per_partition`,
    :func:`~headwater.engine._plan.slot_shares`)."""
    if stream.one_task_per_partition:
        return partitions
    return min(partitions, max(slots, 1))


def interleaved(partitions: Sequence[Partition], tasks: int) -> list[Partition]:
    """``partitions`` reordered so that ``tasks`` consecutive runs of them each take
    every ``tasks``-th one: a task reading a run then gets partitions from the whole
    checkpoint (early and late windows alike) rather than one end of it, which
    evens out the tasks' work when partition sizes drift along the plan."""
    tasks = max(tasks, 1)
    return [partitions[i] for start in range(tasks)
            for i in range(start, len(partitions), tasks)]
