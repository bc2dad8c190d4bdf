"""Type mapping, the pgoutput decoder and the LSN cursor, without a server."""

from __future__ import annotations

import struct

import pyarrow as pa
import pytest

from headwater.connectors.postgres._cdc import (
    LsnCursor,
    decode_message,
    int_to_lsn,
    lsn_to_int,
)
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


def test_pgoutput_messages_decode() -> None:
    relation = (b"R" + struct.pack(">I", 16384) + b"public\0accounts\0" + b"d"
                + struct.pack(">h", 2) + b"\x01id\0" + struct.pack(">Ii", 23, -1)
                + b"\x00owner\0" + struct.pack(">Ii", 25, -1))
    kind, fields = decode_message(relation)
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
    parts = [Partition("s", f"p{i}", {"snapshot_lsn": "0/10", "of": 2}) for i in range(2)]
    cursor.close_partition(parts[0])
    assert cursor.state() is None
    cursor.close_partition(parts[1])
    assert cursor.state() == {"lsn": "0/10"}

    later = LsnCursor({"lsn": "0/10"})
    assert later.state() == {"lsn": "0/10"}
    later.close_partition(Partition("s", "c", {"changes_from": "0/10", "changes_upto": "0/20"}))
    assert later.state() == {"lsn": "0/20"}
    with pytest.raises(StateError):
        LsnCursor({"slices": []})
