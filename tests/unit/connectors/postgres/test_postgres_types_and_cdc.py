"""Type mapping, the pgoutput decoder and the LSN cursor, without a server."""

from __future__ import annotations

import struct

import pyarrow as pa
import pytest
from psycopg.adapt import Transformer

from headwater.connectors.postgres._catalog import ColumnInfo, TableInfo
from headwater.connectors.postgres._cdc import (
    LsnCursor,
    _Decoder,
    decode_message,
    int_to_lsn,
    lsn_to_int,
)
from headwater.connectors.postgres._cdc_cursor import reads_changes, snapshot_plan
from headwater.connectors.postgres._config import PostgresConfig
from headwater.connectors.postgres._types import map_type
from headwater.errors import StateError
from headwater.sdk import Partition
from headwater.table_schema import arrow_type_for


def numeric_typmod(precision: int, scale: int) -> int:
    return ((precision << 16) | scale) + 4


@pytest.mark.parametrize(("name", "kind", "typmod", "element", "arrow"), [
    ("int2", "b", -1, None, pa.int64()),
    ("int8", "b", -1, None, pa.int64()),
    ("numeric", "b", numeric_typmod(12, 3), None, pa.decimal128(12, 3)),
    ("numeric", "b", numeric_typmod(38, 0), None, pa.decimal128(38, 0)),
    ("numeric", "b", numeric_typmod(60, 2), None, pa.string()),  # too wide for a decimal
    ("numeric", "b", -1, None, pa.string()),  # no precision: exact text
    ("float4", "b", -1, None, pa.float64()),
    ("bool", "b", -1, None, pa.bool_()),
    ("bpchar", "b", 7, None, pa.string()),
    ("date", "b", -1, None, pa.date32()),
    ("timestamp", "b", -1, None, pa.timestamp("us")),
    ("timestamptz", "b", -1, None, pa.timestamp("us", tz="UTC")),
    ("interval", "b", -1, None, pa.string()),
    ("uuid", "b", -1, None, pa.string()),
    ("jsonb", "b", -1, None, pa.string()),
    ("bytea", "b", -1, None, pa.binary()),
    ("_int4", "b", -1, "int4", pa.list_(pa.int64())),
    ("_text", "b", -1, "text", pa.list_(pa.string())),
    ("_numeric", "b", -1, "numeric", pa.string()),  # JSON text keeps every digit
    ("mood", "e", -1, None, pa.string()),
    ("point", "b", -1, None, pa.string()),
])
def test_every_type_lands_in_a_type_that_holds_it(
        name: str, kind: str, typmod: int, element: str | None, arrow: pa.DataType) -> None:
    assert arrow_type_for(map_type(name, kind, typmod, element=element).schema) == arrow


def test_unknown_types_are_carried_as_text_and_reported() -> None:
    column = map_type("point", "b", -1)
    assert not column.mapped and column.as_text
    assert "point has no mapping" in column.schema["description"]
    assert map_type("mood", "e", -1, enum_labels=["sad", "ok"]).schema["enum"] == ["sad", "ok"]


def test_the_password_is_percent_encoded_and_never_printed() -> None:
    config = PostgresConfig.model_validate({"database": "d b", "username": "u@x",
                                            "password": "p@ss/w:rd"})
    assert config.conninfo().startswith("postgresql://u%40x:p%40ss%2Fw%3Ard@127.0.0.1:5432/d%20b")
    assert "p@ss" not in repr(config)


def test_lsn_text_round_trips() -> None:
    assert lsn_to_int("16/B374D848") == (0x16 << 32) | 0xB374D848
    assert int_to_lsn(lsn_to_int("16/B374D848")) == "16/B374D848"


def _tuple(*values: bytes | None) -> bytes:
    out = struct.pack(">h", len(values))
    for value in values:
        out += b"n" if value is None else b"t" + struct.pack(">i", len(value)) + value
    return out


def _relation(name: bytes, text_column: bytes) -> bytes:
    """A Relation message of ``public.<name>`` (relid 16384): ``id`` int4 (the key), a text."""
    return (b"R" + struct.pack(">I", 16384) + b"public\0" + name + b"\0" + b"d"
            + struct.pack(">h", 2) + b"\x01id\0" + struct.pack(">Ii", 23, -1)
            + b"\x00" + text_column + b"\0" + struct.pack(">Ii", 25, -1))


def test_pgoutput_messages_decode() -> None:
    kind, fields = decode_message(_relation(b"accounts", b"owner"))
    assert kind == "R" and fields["name"] == "accounts"
    assert fields["columns"] == [("id", 23, -1), ("owner", 25, -1)]

    kind, fields = decode_message(b"U" + struct.pack(">I", 16384) + b"O" + _tuple(b"1", b"a")
                                  + b"N" + _tuple(b"1", None))
    assert kind == "U" and fields["old"] == [("t", b"1"), ("t", b"a")]
    assert fields["new"] == [("t", b"1"), ("n", None)]

    kind, fields = decode_message(b"D" + struct.pack(">I", 16384) + b"K" + _tuple(b"7", None))
    assert kind == "D" and fields["old"][0] == ("t", b"7") and fields["new"] is None

    kind, fields = decode_message(b"B" + struct.pack(">QqI", 99, 0, 5))
    assert (kind, fields["final_lsn"]) == ("B", 99)


def test_lsn_cursor_moves_only_when_the_whole_snapshot_closed() -> None:
    cursor = LsnCursor(None)
    parts = [Partition("s", f"p{i}", {"snapshot_lsn": "0/10", "of": 2, "snapshot_plan": "x"})
             for i in range(2)]
    cursor.close_partition(parts[0])
    # The snapshot's progress is state: a resumed run must know what is already in.
    assert cursor.state() == {"snapshot": {"lsn": "0/10", "plan": "x", "done": ["p0"]}}
    cursor.close_partition(parts[1])
    assert cursor.state() == {"lsn": "0/10"}

    later = LsnCursor({"lsn": "0/10"})
    assert later.state() == {"lsn": "0/10"}
    later.close_partition(Partition("s", "c", {"changes_from": "0/10", "changes_upto": "0/20"}))
    assert later.state() == {"lsn": "0/20"}
    with pytest.raises(StateError):
        LsnCursor({"slices": []})


def test_a_resumed_snapshot_counts_what_earlier_attempts_committed() -> None:
    """Issue 35 case 9: the resumed attempt closes only the partitions not yet released."""
    progress = {"snapshot": {"lsn": "0/10", "plan": "x", "done": ["p0", "p1"]}}
    resumed = LsnCursor(progress)
    assert resumed.state() == progress and not reads_changes(progress)
    resumed.close_partition(Partition("s", "p2", {"snapshot_lsn": "0/10", "of": 3,
                                                  "snapshot_plan": "x"}))
    assert resumed.state() == {"lsn": "0/10"} and reads_changes(resumed.state())

    # Another plan's partitions (other key ranges) count from nothing.
    other = LsnCursor(progress)
    other.close_partition(Partition("s", "q0", {"snapshot_lsn": "0/10", "of": 3,
                                                "snapshot_plan": "y"}))
    assert other.state() == {"snapshot": {"lsn": "0/10", "plan": "y", "done": ["q0"]}}
    assert snapshot_plan(["b", "a"]) == snapshot_plan(["a", "b"]) != snapshot_plan(["a"])


def _decoder() -> _Decoder:
    int4 = map_type("int4", "b", -1)
    table = TableInfo("public", "t", "table", (ColumnInfo("id", int4, False),
                                               ColumnInfo("v", map_type("text", "b", -1), True)),
                      primary_key=("id",))
    decoder = _Decoder(table)
    decoder.transformer = Transformer()
    assert decoder.feed(1, _relation(b"t", b"v")) == []
    return decoder


def _change(kind: bytes, *tuples: tuple[bytes, tuple[bytes | None, ...]]) -> bytes:
    return kind + struct.pack(">I", 16384) + b"".join(m + _tuple(*v) for m, v in tuples)


def test_changes_carry_their_transactions_commit_lsn_and_a_key_change_closes_the_old_key(
        ) -> None:
    """Issue 35 cases 7 and 8: the cursor is the commit's position, not the change's, and an
    update of the key is the old key's tombstone, then the new row."""
    decoder = _decoder()
    assert decoder.feed(100, b"B" + struct.pack(">QqI", 900, 0, 5)) == []
    moved = decoder.feed(120, _change(b"U", (b"K", (b"1", None)), (b"N", (b"100", b"x"))))
    assert moved == [{"id": 1, "_pg_lsn": 900, "_pg_deleted": True},
                     {"id": 100, "v": "x", "_pg_lsn": 900, "_pg_deleted": False}]
    # Same key, the whole old row (REPLICA IDENTITY FULL): no tombstone.
    same = decoder.feed(130, _change(b"U", (b"O", (b"100", b"x")), (b"N", (b"100", b"y"))))
    assert same == [{"id": 100, "v": "y", "_pg_lsn": 900, "_pg_deleted": False}]
    assert decoder.feed(140, _change(b"D", (b"K", (b"100", None)))) == [
        {"id": 100, "_pg_lsn": 900, "_pg_deleted": True}]
    assert decoder.feed(150, _change(b"I", (b"N", (b"7", None)))) == [
        {"id": 7, "v": None, "_pg_lsn": 900, "_pg_deleted": False}]
