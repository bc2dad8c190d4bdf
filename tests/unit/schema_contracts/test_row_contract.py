"""A contract applied to rows in the task's typing pass: each action on each kind of
change, for Arrow batches and dict records alike (``read_partition``, the tasks' path)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import pyarrow as pa
import pytest

from headwater.config._schema_contract import SchemaContract
from headwater.engine._task import TaskContext, read_partition
from headwater.errors import SchemaContractError
from headwater.schema_contracts import RESCUED, RowContract, Tally, find_changes, written_schema
from headwater.sdk import Partition, RecordOrBatch, Stream
from headwater.table_schema import META_FIELDS

#: The table has id and name (name as a long); the stream declares name a string, and
#: records carry ``extra`` (outside the stream's schema).
STREAM = pa.schema([("id", pa.int64()), ("name", pa.string())])
TABLE = pa.schema([*META_FIELDS, pa.field("id", pa.int64()), pa.field("name", pa.int64())])
READ = pa.schema([("id", pa.int64()), ("name", pa.string()), ("extra", pa.struct(
    [("b", pa.float64()), ("a", pa.list_(pa.int64()))]))])
RECORDS = [{"id": 1, "name": "7"}, {"id": 2, "name": None, "extra": {"b": 1.5, "a": [1]}},
           {"id": 3, "name": None}]


class _Rows(Stream):
    name = "users"

    def __init__(self, as_batch: bool) -> None:
        self.as_batch = as_batch

    def json_schema(self) -> dict[str, Any]:
        return {"type": "object", "properties": {"id": {"type": "integer"},
                                                 "name": {"type": "string"}}}

    def partitions(self, state: Mapping[str, Any] | None) -> list[Partition]:
        return [Partition("users", "p0")]

    def read(self, partition: Partition) -> Iterator[RecordOrBatch]:
        if self.as_batch:
            yield pa.RecordBatch.from_pylist(RECORDS, schema=READ)
        else:
            yield from (dict(r) for r in RECORDS)


def _run(contract: SchemaContract, *, as_batch: bool) -> tuple[list[dict[str, Any]], Tally]:
    changes = find_changes("users", STREAM, TABLE, connection_synced=True, contract=contract)
    written = written_schema(STREAM, changes, contract)
    # As a destination prepares it: a column the table has keeps the table's type.
    prepared = pa.schema([TABLE.field(f.name) if f.name in TABLE.names else f for f in written])
    context = TaskContext(run_id="r", checkpoint_index=0, data_schema=prepared,
                          contract=RowContract.of("users", contract, written, changes))
    tally = Tally()
    batches = list(read_partition(_Rows(as_batch), Partition("users", "p0"), context, tally))
    rows = pa.Table.from_batches(batches, context.output_schema).to_pylist()
    return [{k: v for k, v in r.items() if k in ("id", "name", RESCUED, "_hw_notes")}
            for r in rows], tally


BOTH = pytest.mark.parametrize("as_batch", [False, True], ids=["records", "arrow"])


@BOTH
def test_rescue_keeps_unknown_fields_as_json_in_one_column(as_batch: bool) -> None:
    rows, tally = _run(SchemaContract(new_columns="rescue"), as_batch=as_batch)
    assert [r["id"] for r in rows] == [1, 2, 3]
    assert [r[RESCUED] for r in rows] == [None, '{"extra": {"a": [1], "b": 1.5}}', None]
    assert json.loads(rows[1][RESCUED]) == {"extra": {"a": [1], "b": 1.5}}
    assert rows[1]["_hw_notes"] is None and tally.rows == 0


@BOTH
def test_discard_row_keeps_out_rows_with_a_new_field_counted_by_reason(as_batch: bool) -> None:
    rows, tally = _run(SchemaContract(new_columns="discard_row"), as_batch=as_batch)
    assert [r["id"] for r in rows] == [1, 3]
    assert tally.rows == 1
    assert dict(tally.reasons) == {"new column extra, not in the table: row kept out by "
                                   "schema_contract new_columns: discard_row": 1}


@BOTH
def test_discard_value_nulls_a_new_field_with_a_note(as_batch: bool) -> None:
    rows, tally = _run(SchemaContract(new_columns="discard_value"), as_batch=as_batch)
    assert [r["id"] for r in rows] == [1, 2, 3]
    [note] = rows[1]["_hw_notes"]
    assert note["field"] == "extra"
    assert note["reason"] == ("new column extra, not in the table: value discarded by "
                              "schema_contract new_columns: discard_value")
    assert json.loads(note["value"]) == {"a": [1], "b": 1.5}
    assert tally.rows == 0


@BOTH
def test_freeze_fails_the_task_on_a_field_only_records_carry(as_batch: bool) -> None:
    with pytest.raises(SchemaContractError) as info:
        _run(SchemaContract(new_columns="freeze"), as_batch=as_batch)
    # The task's error names the partition it was reading (issue 39: which one failed).
    assert info.value.context == {"stream": "users", "column": "extra", "stream_type": "object",
                                  "table_type": "(no such column)", "partition": "p0"}


@BOTH
def test_a_changed_types_values_are_discarded_or_their_rows_kept_out(as_batch: bool) -> None:
    rows, tally = _run(SchemaContract(type_changes="discard_value"), as_batch=as_batch)
    assert [(r["id"], r["name"]) for r in rows] == [(1, None), (2, None), (3, None)]
    [note] = rows[0]["_hw_notes"]
    assert (note["field"], note["value"]) == ("name", "7")
    assert note["reason"] == ("column name changed type (the stream's string, the table's "
                              "long): value discarded by schema_contract type_changes: "
                              "discard_value")
    rows, tally = _run(SchemaContract(type_changes="discard_row"), as_batch=as_batch)
    assert [r["id"] for r in rows] == [2, 3]
    assert tally.rows == 1


@BOTH
def test_evolve_types_as_today(as_batch: bool) -> None:
    rows, _tally = _run(SchemaContract(), as_batch=as_batch)
    # The table keeps its type: "7" lands as 7; the unknown field is noted, as always.
    assert [(r["id"], r["name"]) for r in rows] == [(1, 7), (2, None), (3, None)]
    assert [n["reason"] for n in rows[1]["_hw_notes"]] == ["not in the stream schema"]


def test_the_sync_summary_says_how_many_rows_the_contract_kept_out_and_why() -> None:
    from rich.console import Console

    from headwater.cli._render import print_result
    from headwater.engine import SyncResult
    from headwater.engine._results import StreamStats

    reason = "new column tier, not in the table: row kept out by schema_contract ..."
    stats = StreamStats(name="users", mode="incremental+append", status="succeeded",
                        records_discarded=3, discarded={reason: 3})
    out, err = Console(record=True, width=200), Console(record=True, width=200)
    print_result(SyncResult("r", "c", "succeeded", False, 1, [stats]), out, err)
    assert f"users: 3 rows kept out: {reason}" in err.export_text()
    assert stats.to_dict()["records_discarded"] == 3
    assert stats.to_dict()["discarded"] == {reason: 3}


def test_a_resumed_run_counts_every_attempts_kept_out_rows() -> None:
    """The figures of a resumed run are the whole run's: what each durable checkpoint
    recorded, whichever attempt committed it."""
    import threading
    from datetime import UTC, datetime
    from types import SimpleNamespace

    from headwater.engine._results import StreamStats
    from headwater.engine._stream_runner import StreamRunner
    from headwater.metadata_store import CheckpointRecord

    def record(index: int, status: str, discarded: dict[str, int]) -> CheckpointRecord:
        stats = {"records_discarded": sum(discarded.values()), "discarded": discarded}
        return CheckpointRecord("run", "users", index, f"c{index}", status, stats,
                                updated_at=datetime.now(UTC))

    runner = object.__new__(StreamRunner)
    runner.run_id, runner.name, runner._lock = "run", "users", threading.Lock()
    runner.stats = StreamStats(name="users", mode="incremental+append")
    runner.store = SimpleNamespace(list_checkpoints=lambda run_id: [
        record(0, "released", {"a": 2}), record(1, "committed", {"a": 1, "b": 1}),
        record(2, "failed", {"b": 5})])
    runner._count_whole_run()
    assert runner.stats.records_discarded == 4
    assert runner.stats.discarded == {"a": 3, "b": 1}
