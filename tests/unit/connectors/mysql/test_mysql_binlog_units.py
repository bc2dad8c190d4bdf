"""The mysql source's binary log pieces that need no server: positions, state, packed values."""

from __future__ import annotations

import decimal
from types import SimpleNamespace

import pytest

from headwater.connectors.mysql import MySQLSource
from headwater.connectors.mysql._binlog import BinlogCursor, Position
from headwater.connectors.mysql._binlog_values import ImageColumn, read_image
from headwater.connectors.mysql._catalog import ColumnInfo
from headwater.connectors.mysql._types import map_type
from headwater.errors import StateError
from headwater.sdk import Partition


def test_positions_order_as_the_server_writes_across_files() -> None:
    early, late = Position.parse("mariadb-bin.000009:99999"), Position.parse("mariadb-bin.000010:4")
    assert early < late and early.cursor < late.cursor
    assert str(late) == "mariadb-bin.000010:4" and late.cursor == (10 << 32) | 4
    with_gtid = Position.parse("mariadb-bin.000010:4;0-1-57,1-2-3")
    assert with_gtid == late and with_gtid.gtid == "0-1-57,1-2-3"
    assert str(with_gtid) == "mariadb-bin.000010:4;0-1-57,1-2-3"
    with pytest.raises(ValueError):
        Position.parse("0/16B3748")


def test_the_state_moves_to_the_snapshot_position_once_every_range_is_committed() -> None:
    cursor = BinlogCursor(None)
    params = {"snapshot_binlog": "bin.000001:400", "of": 2, "snapshot_plan": "p"}
    cursor.close_partition(Partition("t", "a", params))
    assert cursor.state() == {"snapshot": {"binlog": "bin.000001:400", "plan": "p",
                                           "done": ["a"]}}
    resumed = BinlogCursor(cursor.state())
    resumed.close_partition(Partition("t", "b", params))
    assert resumed.state() == {"binlog": "bin.000001:400"}
    assert BinlogCursor.reads_changes(resumed.state())
    changes = BinlogCursor(resumed.state())
    changes.close_partition(Partition("t", "c", {"changes_from": "bin.000001:400",
                                                 "changes_upto": "bin.000002:4"}))
    assert changes.state() == {"binlog": "bin.000002:4"}
    with pytest.raises(StateError, match="FILE:OFFSET"):
        BinlogCursor({"lsn": "0/10"})


def test_cdc_is_a_replication_method_of_the_spec() -> None:
    spec = MySQLSource.spec()
    assert spec["properties"]["replication_method"]["enum"] == ["standard", "cdc"]


def _column(data_type: str, column_type: str, meta: dict[str, int]) -> ImageColumn:
    kind = map_type(data_type, column_type, meta.get("precision"), meta.get("decimals"))
    return ImageColumn(ColumnInfo("c", kind, True), SimpleNamespace(**meta))


def _read(data: bytes, column: ImageColumn) -> object:
    chunks = bytearray(b"\x00" + data)  # the null bitmap, then the value

    def read(size: int) -> bytes:
        taken = bytes(chunks[:size])
        del chunks[:size]
        return taken

    row, notes = read_image(read, [column], b"\x01")
    assert not chunks and not notes
    return row["c"]


def test_a_negative_time_borrows_from_its_fraction() -> None:
    # -01:00:00.50 as TIME(2): integer part -4097 (+ 0x800000), fraction byte -50.
    column = _column("time", "time(2)", {"type": 19, "fsp": 2})
    assert _read(bytes.fromhex("7fefffce"), column) == "-01:00:00.50"


def test_a_negative_decimal_is_stored_with_its_bits_flipped() -> None:
    column = _column("decimal", "decimal(10,2)", {"type": 246, "precision": 10, "decimals": 2})
    assert _read(bytes.fromhex("8000000119"), column) == decimal.Decimal("1.25")
    assert _read(bytes.fromhex("7ffffffee6"), column) == decimal.Decimal("-1.25")
