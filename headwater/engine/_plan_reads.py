"""Reads a stream needs while it is being planned, run on Spark.

A substream's partitions come from its parent's records.  The parent's
partitions are read here on the executors (one Spark task each, like a sync),
and only the few fields the child needs come back to the driver, as one JSON
string per record: rows never travel through the driver, keys do.

Errors raised by a connector on an executor reach the driver wrapped in a
Spark exception; :func:`headwater_error_from` recovers the Headwater error
(an :class:`~headwater.errors.AuthenticationError` must stay one, so the CLI
exits with the credentials' exit code).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from headwater import errors
from headwater.engine._task import (
    freeze_worker_objects,
    interleaved,
    partitions_in_turn,
    stream_slots,
    task_count,
)
from headwater.errors import ConnectorError, HeadwaterError
from headwater.sdk import Partition, PlanContext, Stream

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import SparkSession

__all__ = ["headwater_error_from", "spark_plan_context"]

_REMOTE_ERROR = re.compile(r"headwater\.errors\.(\w+): (.+)")


def headwater_error_from(exc: BaseException) -> HeadwaterError | None:
    """The Headwater error behind ``exc``, even when Spark wrapped it; else ``None``.

    Walks the chain of causes: a connector's error raised on an executor is
    found in the text of the Spark exception it travelled in (the innermost one
    wins, it says what actually went wrong); otherwise the first Headwater
    error of the chain is returned.
    """
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    for candidate in reversed(chain):
        matches = _REMOTE_ERROR.findall(str(candidate))
        if matches and not isinstance(candidate, HeadwaterError):
            name, message = matches[-1]
            kind = getattr(errors, name, None)
            if not (isinstance(kind, type) and issubclass(kind, HeadwaterError)) \
                    or kind is errors.SpecValidationError:
                kind = ConnectorError
            return kind(message.strip())
    return next((c for c in chain if isinstance(c, HeadwaterError)), None)


def _fields_task(stream: Stream, partitions: Sequence[Partition],
                 fields: Sequence[str]) -> Any:
    frozen = list(partitions)
    names = list(fields)

    def run(positions: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        import pyarrow as pa

        from headwater.sdk import read_fields_locally

        freeze_worker_objects()
        try:
            for partition in partitions_in_turn(stream, frozen, positions):
                rows = read_fields_locally(stream, [partition], names)
                text = [json.dumps(row, default=str, sort_keys=True) for row in rows]
                yield pa.RecordBatch.from_arrays([pa.array(text, pa.string())], ["row"])
        finally:
            stream.task_done()

    return run


def read_fields_on_spark(spark: SparkSession, stream: Stream, partitions: Sequence[Partition],
                         fields: Sequence[str], *, parallel_tasks: int = 1,
                         ) -> list[dict[str, Any]]:
    """Read ``partitions`` of ``stream`` on the executors; return ``fields`` per record.

    As in a sync, a stream whose partitions share a task's set-up
    (``one_task_per_partition = False``) is read by at most ``parallel_tasks``
    tasks, each taking a run of them.
    """
    if not partitions:
        return []
    count = len(partitions)
    tasks = task_count(stream, count, stream_slots(stream, parallel_tasks))
    positions = spark.range(0, count, 1, numPartitions=tasks)
    frame = positions.mapInArrow(_fields_task(stream, interleaved(partitions, tasks), fields),
                                 "row string")
    try:
        table = frame.toArrow()
    except Exception as exc:
        found = headwater_error_from(exc)
        if found is None:
            raise ConnectorError(f"reading the parent stream {stream.stream_name!r} to plan "
                                 f"its substream failed: {type(exc).__name__}",
                                 stream=stream.stream_name) from exc
        raise found from exc
    return [json.loads(text) for text in table.column("row").to_pylist()]


def spark_plan_context(spark: SparkSession, parallel_tasks: int) -> PlanContext:
    """The context the engine plans with: Spark's parallelism and reads on Spark."""

    def read_fields(stream: Stream, partitions: Sequence[Partition],
                    fields: Sequence[str]) -> list[dict[str, Any]]:
        return read_fields_on_spark(spark, stream, partitions, fields,
                                    parallel_tasks=parallel_tasks)

    return PlanContext(parallel_tasks=parallel_tasks, read_fields=read_fields)
