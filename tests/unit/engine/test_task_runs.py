"""A Spark task reading a run of partitions: their order, and the hint before each one."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa

from headwater.engine._task import (
    TaskContext,
    interleaved,
    make_task,
    stream_slots,
    task_count,
)
from headwater.sdk import Partition, RecordOrBatch, Stream

SCHEMA = pa.schema([pa.field("id", pa.int64())])


class _Recording(Stream):
    """Notes what the engine told it and read, in order."""

    name = "things"
    one_task_per_partition = False

    def __init__(self) -> None:
        self.events: list[str] = []
        self.cap: int | None = None

    @property
    def max_concurrent_tasks(self) -> int | None:
        return self.cap

    def json_schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": {"id": {"type": "integer"}}}

    def partitions(self, state: Mapping[str, Any] | None) -> list[Partition]:
        return [Partition("things", f"p{i}") for i in range(5)]

    def reads_next(self, partition: Partition) -> None:
        self.events.append(f"next {partition.id}")

    def read(self, partition: Partition) -> Iterator[RecordOrBatch]:
        self.events.append(f"read {partition.id}")
        yield {"id": int(partition.id[1:])}


def test_interleaved_runs_take_every_tasks_th_partition() -> None:
    partitions = [Partition("s", f"p{i}") for i in range(7)]
    order = [p.id for p in interleaved(partitions, 3)]
    assert order == ["p0", "p3", "p6", "p1", "p4", "p2", "p5"]
    assert interleaved(partitions, 7) == partitions  # one task each: the plan's order
    assert interleaved(partitions, 1) == partitions


def test_short_partitions_share_tasks_up_to_the_parallelism() -> None:
    stream = _Recording()
    assert task_count(stream, 16, 2) == 2
    assert task_count(stream, 1, 2) == 1
    stream.one_task_per_partition = True  # type: ignore[misc]
    assert task_count(stream, 16, 2) == 16


def test_a_stream_read_in_runs_can_cap_its_tasks_at_once() -> None:
    stream = _Recording()
    assert stream_slots(stream, 8) == 8  # no cap
    stream.cap = 3
    assert stream_slots(stream, 8) == 3
    assert stream_slots(stream, 2) == 2
    stream.one_task_per_partition = True  # type: ignore[misc]
    assert stream_slots(stream, 8) == 8  # Spark runs one task per partition on every slot


def test_a_task_hints_each_next_partition_before_reading_the_current_one() -> None:
    stream = _Recording()
    partitions = stream.partitions(None)
    run = make_task(stream, partitions, TaskContext("r", 1, SCHEMA))
    positions = pa.record_batch([pa.array([3, 1, 4])], names=["id"])
    table = pa.Table.from_batches(list(run(iter([positions]))))
    assert table.column("id").to_pylist() == [3, 1, 4]
    assert stream.events == ["next p1", "read p3", "next p4", "read p1", "read p4"]


def test_a_task_announces_each_partition_read_and_its_end() -> None:
    """The moments a benchmark times a task's part of a sync's tail by."""
    from headwater import _events

    stream = _Recording()
    heard: list[str] = []
    _events.listen_in_tasks(lambda moment: heard.append(f"{moment} {len(stream.events)}"))
    try:
        run = make_task(stream, stream.partitions(None), TaskContext("r", 1, SCHEMA))
    finally:
        _events.clear()
    positions = pa.record_batch([pa.array([0, 2])], names=["id"])
    assert len(list(run(iter([positions])))) == 2
    # (how many reads the stream had seen when each moment came)
    assert heard == ["reading 1", "partition-read 2", "reading 2", "partition-read 3",
                     "task-read 3"]


def test_a_connectors_error_names_the_partition_it_was_read_in() -> None:
    """The driver reads the failing partition back from the error (the run page shows the
    error on that partition, not on every partition of its checkpoint)."""
    import pytest

    from headwater.errors import ConnectorError

    class _Failing(_Recording):
        def read(self, partition: Partition) -> Iterator[RecordOrBatch]:
            if partition.id.endswith("p3"):
                raise ConnectorError("HTTP 500 from the API", stream=self.name)
            yield {"id": 1}

    stream = _Failing()
    partitions = stream.partitions(None)
    run = make_task(stream, partitions, TaskContext("r", 1, SCHEMA))
    with pytest.raises(ConnectorError) as raised:
        list(run(iter([pa.record_batch([pa.array([1, 3])], names=["id"])])))
    assert str(raised.value) == (f"HTTP 500 from the API (stream=things, "
                                 f"partition={partitions[3].id})")
