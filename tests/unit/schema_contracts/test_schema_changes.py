"""Which schema changes a stream meets, and what a frozen contract says about them."""

from __future__ import annotations

import pyarrow as pa
import pytest

from headwater.config._schema_contract import SchemaContract
from headwater.errors import ExitCode, SchemaContractError
from headwater.schema_contracts import (
    RESCUED,
    SchemaChange,
    find_changes,
    refuse_frozen,
    written_schema,
)
from headwater.table_schema import META_FIELDS

FREEZE = SchemaContract.model_validate("freeze")
STREAM = pa.schema([("id", pa.int64()), ("name", pa.string()), ("amount", pa.float64())])


def _table(*fields: pa.Field) -> pa.Schema:
    return pa.schema(META_FIELDS + list(fields))


def test_a_first_sync_meets_no_change_a_later_one_a_new_table() -> None:
    assert find_changes("users", STREAM, None, connection_synced=False, contract=FREEZE) == []
    assert find_changes("users", STREAM, None, connection_synced=True, contract=FREEZE) == [
        SchemaChange("new_table", "users", "freeze")]


def test_new_columns_and_type_changes_against_the_tables_columns() -> None:
    table = _table(pa.field("id", pa.int64()), pa.field("name", pa.int64()),
                   pa.field(RESCUED, pa.string()))
    contract = SchemaContract(new_columns="rescue", type_changes="discard_row")
    changes = find_changes("users", STREAM, table, connection_synced=True, contract=contract)
    assert changes == [
        SchemaChange("new_column", "users", "rescue", "amount", "double", None),
        SchemaChange("type_change", "users", "discard_row", "name", "string", "long"),
    ]


def test_a_type_the_table_holds_is_no_change() -> None:
    narrow = pa.schema([("id", pa.int32()), ("at", pa.timestamp("us", tz="UTC"))])
    table = _table(pa.field("id", pa.int64()), pa.field("at", pa.timestamp("us", tz="UTC")))
    assert find_changes("s", narrow, table, connection_synced=True, contract=FREEZE) == []


def test_the_written_columns_leave_out_what_the_contract_keeps_out_and_add_the_rescue() -> None:
    table = _table(pa.field("id", pa.int64()))
    rescue = SchemaContract(new_columns="rescue")
    changes = find_changes("s", STREAM, table, connection_synced=True, contract=rescue)
    assert written_schema(STREAM, changes, rescue).names == ["id", RESCUED]
    evolve = SchemaContract(type_changes="freeze")
    changes = find_changes("s", STREAM, table, connection_synced=True, contract=evolve)
    assert written_schema(STREAM, changes, evolve).names == STREAM.names


def test_a_frozen_change_fails_naming_stream_column_and_both_types() -> None:
    table = _table(pa.field("id", pa.int64()), pa.field("name", pa.int64()),
                   pa.field("amount", pa.float64()))
    changes = find_changes("users", STREAM, table, connection_synced=True, contract=FREEZE)
    with pytest.raises(SchemaContractError) as info:
        refuse_frozen(changes)
    error = info.value
    assert error.exit_code == ExitCode.SCHEMA_CONTRACT == 5
    assert "stream users: column name changed type: the stream's string, the table's long" \
        in error.message
    assert error.context == {"stream": "users", "column": "name", "stream_type": "string",
                             "table_type": "long"}


def test_changes_a_contract_lets_in_are_not_refused() -> None:
    refuse_frozen([SchemaChange("new_column", "s", "evolve", "x", "long")])


def test_a_kafka_topic_has_no_columns_a_contract_could_hold_a_stream_to() -> None:
    from headwater.config._schema_contract import SchemaContract as Contract
    from headwater.destinations.kafka import KafkaDestination
    from headwater.errors import ConfigError
    from headwater.schema_contracts import check_stream

    destination = KafkaDestination({"bootstrap_servers": "127.0.0.1:9092"})
    # Evolving needs no look at the topic; any other action is refused, naming the field.
    assert check_stream(destination, "users", STREAM, Contract(), connection_synced=True
                        ).written == STREAM
    with pytest.raises(ConfigError) as info:
        check_stream(destination, "users", STREAM, FREEZE, connection_synced=True)
    assert info.value.context["field"] == "schema_contract"
    assert "no table whose columns a schema_contract could hold the stream to" in str(info.value)
