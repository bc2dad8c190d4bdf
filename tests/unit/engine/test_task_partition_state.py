"""A stream that keeps its own state: the task hands the partition's last state on.

Either as one extra row, last (Spark Connect), or with the partition's figures
in the stats accumulator (classic Spark); never for a read that failed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa
import pytest

from headwater.engine._task import STATE_COLUMN, TaskContext, _counted, read_partition
from headwater.errors import ConnectorError
from headwater.sdk import (
    ConnectorStateCursor,
    Partition,
    PartitionState,
    RecordOrBatch,
    Stream,
)

SCHEMA = pa.schema([pa.field("id", pa.int64())])


class _OwnState(Stream):
    name = "things"
    keeps_own_state = True

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail

    def json_schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": {"id": {"type": "integer"}}}

    def partitions(self, state: Mapping[str, Any] | None) -> list[Partition]:
        return [Partition("things", "p0")]

    def read(self, partition: Partition) -> Iterator[RecordOrBatch]:
        yield {"id": 1}
        yield PartitionState({"cursor": 1})
        yield {"id": 2}
        if self.fail:
            raise RuntimeError("connector died")
        yield PartitionState({"cursor": 2})


def _context(carries: bool) -> TaskContext:
    return TaskContext(run_id="r", checkpoint_index=3, data_schema=SCHEMA, carries_state=carries)


def test_records_then_one_state_row_with_the_last_state() -> None:
    table = pa.Table.from_batches(list(read_partition(_OwnState(), Partition("things", "p0"),
                                                      _context(True))))
    assert table.column("id").to_pylist() == [1, 2, None]
    states = table.column(STATE_COLUMN).to_pylist()
    assert states[:2] == [None, None]
    assert json.loads(states[2]) == {"partition": "p0", "state": {"cursor": 2}}
    assert table.column("_hw_raw_id").to_pylist()[2].endswith("-state")


def test_a_read_that_fails_yields_no_state_row() -> None:
    batches = []
    with pytest.raises(ConnectorError, match="connector died"):
        for batch in read_partition(_OwnState(fail=True), Partition("things", "p0"),
                                    _context(True)):
            batches.append(batch)
    assert all(STATE_COLUMN not in b.schema.names or b.column(STATE_COLUMN).null_count
               == b.num_rows for b in batches)


def test_without_the_flag_the_output_schema_is_unchanged() -> None:
    table = pa.Table.from_batches(list(read_partition(_OwnState(), Partition("things", "p0"),
                                                      _context(False))))
    assert STATE_COLUMN not in table.schema.names
    assert table.num_rows == 2


class _Accumulator:
    """Stands in for the Spark accumulator a task adds to (``add`` is all a task calls)."""

    def __init__(self) -> None:
        self.added: list[dict[str, Any]] = []

    def add(self, value: dict[str, Any]) -> None:
        self.added.append(value)


def test_with_an_accumulator_the_state_goes_with_the_figures_and_not_into_the_rows() -> None:
    context = TaskContext(run_id="r", checkpoint_index=3, data_schema=SCHEMA, reports_state=True)
    sink = _Accumulator()
    batches = list(_counted(read_partition(_OwnState(), Partition("things", "p0"), context),
                            "p0", sink, report_state=True))  # type: ignore[arg-type]
    assert sum(b.num_rows for b in batches) == 2
    assert all(STATE_COLUMN not in b.schema.names for b in batches)
    assert sink.added == [{"p0": {**sink.added[0]["p0"], "state": {"cursor": 2}}}]
    assert sink.added[0]["p0"]["records"] == 2


def test_with_an_accumulator_a_failed_read_reports_nothing() -> None:
    context = TaskContext(run_id="r", checkpoint_index=3, data_schema=SCHEMA, reports_state=True)
    sink = _Accumulator()
    with pytest.raises(ConnectorError, match="connector died"):
        list(_counted(read_partition(_OwnState(fail=True), Partition("things", "p0"), context),
                      "p0", sink, report_state=True))  # type: ignore[arg-type]
    assert sink.added == []


def test_connector_state_cursor_moves_only_on_observed_state() -> None:
    cursor = ConnectorStateCursor({"cursor": 0})
    partition = Partition("things", "p0")
    cursor.close_partition(partition)
    assert cursor.state() == {"cursor": 0}
    cursor.observe_state(partition, {"cursor": 9})
    assert cursor.state() == {"cursor": 9}
    assert ConnectorStateCursor(None).state() is None
