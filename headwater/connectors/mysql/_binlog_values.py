"""One row image of a binary log row event, decoded into the values a snapshot reads.

python-mysql-replication (:mod:`._binlog`) frames the stream, keeps the table maps
and reads each row event's header; the values of the rows are decoded here, from
the same packet, because its own row decoding is not what the table needs (checked
against MariaDB 10.11 with ``binlog_row_metadata=FULL``): ``BINARY(n)`` comes back as
text without its zero padding, ``YEAR`` 0 as 1900, an empty ``SET`` as NULL and
others as an unordered Python set, ``BIT`` as a string of digits, a zero
``TIMESTAMP`` as 1970-01-01 and zero or partial dates as NULL without the value,
and a value's bytes are decoded by the column's character set when there is one,
as UTF-8 when there is not (a ``BLOB`` then fails on ``0xFF``, or loses the byte).

So each value is decoded by the column's *declared* type, which the source read
from ``information_schema`` (:class:`._catalog.ColumnInfo`), and the binary
log's own metadata of the column (its storage type, fractional digits,
precision, length bytes): every type lands as the snapshot reader lands it
(:mod:`._types`), and zero or partial dates as NULL with the same note
(:mod:`._misfits`), the server's text of the value in it.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from headwater.connectors.mysql._catalog import ColumnInfo
from headwater.connectors.mysql._misfits import REASON
from headwater.errors import ConnectorError
from headwater.table_schema import Note

__all__ = ["ImageColumn", "binary_length", "read_image"]

# The storage types of the binary log (MySQL's enum_field_types).
TINY, SHORT, LONG, FLOAT, DOUBLE, TIMESTAMP, LONGLONG, INT24 = 1, 2, 3, 4, 5, 7, 8, 9
DATE, YEAR, VARCHAR, BIT, TIMESTAMP2, DATETIME2, TIME2 = 10, 13, 15, 16, 17, 18, 19
JSON, NEWDECIMAL, ENUM, SET, BLOB, VAR_STRING, STRING, GEOMETRY = (
    245, 246, 247, 248, 252, 253, 254, 255)
_INTEGERS = {TINY: 1, SHORT: 2, INT24: 3, LONG: 4, LONGLONG: 8}
_DIGITS_BYTES = (0, 1, 1, 2, 2, 3, 3, 4, 4, 4)  # bytes of a decimal's 0..9 leftover digits
#: The note of a value of a type with no mapping: the snapshot carries the server's
#: text of it, which the binary log does not hold.
UNMAPPED = ("a value of a type with no mapping, which a snapshot carries as the server's "
            "text and change data capture cannot write")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)

Read = Callable[[int], bytes]


@dataclass(frozen=True)
class ImageColumn:
    """One column of a row image: its declared type and the binary log's metadata of it.

    ``meta`` is python-mysql-replication's ``Column`` of the table map (``type``,
    and as the type has them ``fsp``, ``precision``, ``decimals``, ``length_size``,
    ``max_length``, ``bits``, ``size``, ``character_set_name``).
    """

    info: ColumnInfo
    meta: Any


def binary_length(column: ColumnInfo) -> int | None:
    """The length a ``BINARY(n)`` value always has (the server pads it with zeros)."""
    full = column.type.mysql_type
    if full.startswith("binary(") and full.endswith(")"):
        return int(full[len("binary("):-1])
    return None


def _little(data: bytes) -> int:
    return int.from_bytes(data, "little")


def _big(data: bytes) -> int:
    return int.from_bytes(data, "big")


def _fraction(read: Read, fsp: int) -> int:
    """The microseconds of a temporal value with ``fsp`` fractional digits (big-endian,
    one byte per two digits)."""
    size = (fsp + 1) // 2
    return _big(read(size)) * 10 ** (6 - 2 * size) if size else 0


def _fraction_text(micros: int, fsp: int) -> str:
    return f".{micros:06d}"[:fsp + 1] if fsp else ""


def _decimal(read: Read, precision: int, scale: int) -> decimal.Decimal:
    """MySQL's packed decimal: groups of nine digits in four bytes, big-endian, the sign
    in the top bit of the first byte (a negative value is stored with every bit flipped)."""
    whole, whole_left = divmod(precision - scale, 9)
    part, part_left = divmod(scale, 9)
    size = whole * 4 + _DIGITS_BYTES[whole_left] + part * 4 + _DIGITS_BYTES[part_left]
    raw = bytearray(read(size))
    negative = not raw[0] & 0x80
    raw[0] ^= 0x80
    if negative:
        raw = bytearray(b ^ 0xFF for b in raw)
    at = 0

    def digits(size: int, width: int) -> str:
        nonlocal at
        value = _big(bytes(raw[at:at + size]))
        at += size
        return f"{value:0{width}d}"

    text = digits(_DIGITS_BYTES[whole_left], whole_left) if whole_left else ""
    text += "".join(digits(4, 9) for _ in range(whole))
    fraction = "".join(digits(4, 9) for _ in range(part))
    fraction += digits(_DIGITS_BYTES[part_left], part_left) if part_left else ""
    number = (text.lstrip("0") or "0") + ("." + fraction if scale else "")
    return decimal.Decimal(("-" if negative else "") + number)


def _time(read: Read, fsp: int) -> str:
    """``TIME(fsp)`` (MySQL 5.6's packed form) as the server writes it: ``[-]HH:MM:SS[.f]``.

    The value is one signed number, integer part above 24 bits of fraction, stored
    with an offset; a negative value's fraction borrows from its integer part.
    """
    if fsp >= 5:
        packed = _big(read(6)) - 0x800000000000
    else:
        whole = _big(read(3)) - 0x800000
        fraction, size = 0, (fsp + 1) // 2
        if size:
            fraction = _big(read(size))
            if whole < 0 and fraction:
                whole += 1
                fraction -= 1 << (8 * size)
            fraction *= 10 ** (6 - 2 * size)
        packed = (whole << 24) + fraction
    sign = "-" if packed < 0 else ""
    packed = abs(packed)
    hms, micros = packed >> 24, packed % (1 << 24)
    hours, minutes, seconds = (hms >> 12) % (1 << 10), (hms >> 6) % 64, hms % 64
    return f"{sign}{hours:02d}:{minutes:02d}:{seconds:02d}{_fraction_text(micros, fsp)}"


class _Misfit(Exception):
    """A zero or partial date: no date type holds it; ``text`` is the server's."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def _date(read: Read) -> dt.date:
    packed = _little(read(3))
    year, month, day = packed >> 9, (packed >> 5) % 16, packed % 32
    if not (year and month and day):
        raise _Misfit(f"{year:04d}-{month:02d}-{day:02d}")
    return dt.date(year, month, day)


def _datetime(read: Read, fsp: int) -> dt.datetime:
    packed = _big(read(5)) - 0x8000000000
    micros = _fraction(read, fsp)
    date, clock = packed >> 17, packed % (1 << 17)
    year_month, day = date >> 5, date % 32
    year, month = divmod(year_month, 13)
    hour, minute, second = clock >> 12, (clock >> 6) % 64, clock % 64
    if not (year and month and day):
        raise _Misfit(f"{year:04d}-{month:02d}-{day:02d} {hour:02d}:{minute:02d}:"
                      f"{second:02d}{_fraction_text(micros, fsp)}")
    return dt.datetime(year, month, day, hour, minute, second, micros)


def _timestamp(read: Read, fsp: int) -> dt.datetime:
    seconds = _big(read(4))
    micros = _fraction(read, fsp)
    if not seconds and not micros:  # the zero TIMESTAMP: 1970-01-01 00:00:00 is not one
        raise _Misfit("0000-00-00 00:00:00" + _fraction_text(0, fsp))
    return _EPOCH + dt.timedelta(seconds=seconds, microseconds=micros)


def _labels(column: ColumnInfo, key: str) -> list[str]:
    return list(column.type.schema.get(key) or ())


def _text(raw: bytes, meta: Any) -> str:
    charset = getattr(meta, "character_set_name", None)
    try:
        return raw.decode(_ENCODINGS.get(charset, charset) if charset else "utf-8")
    except LookupError:
        return raw.decode("utf-8")


_ENCODINGS = {"utf8": "utf-8", "utf8mb3": "utf-8", "utf8mb4": "utf-8", "latin1": "cp1252",
              "binary": "latin-1"}


def _bytes_or_text(raw: bytes, column: ImageColumn) -> bytes | str:
    info = column.info
    if info.type.arrow == "binary":
        length = binary_length(info)
        return raw.ljust(length, b"\0") if length else raw
    return _text(raw, column.meta)


def _value(read: Read, column: ImageColumn) -> Any:
    """One non-null value of ``column`` (raises :class:`_Misfit` for a zero date)."""
    meta, info = column.meta, column.info
    kind = meta.type
    unsigned = "unsigned" in info.type.mysql_type
    if kind in _INTEGERS:
        value = int.from_bytes(read(_INTEGERS[kind]), "little", signed=not unsigned)
        return decimal.Decimal(value) if info.type.arrow == "decimal(20,0)" else value
    if kind == FLOAT:
        return float(struct.unpack("<f", read(4))[0])
    if kind == DOUBLE:
        return float(struct.unpack("<d", read(8))[0])
    if kind == NEWDECIMAL:
        number = _decimal(read, meta.precision, meta.decimals)
        return number if info.type.schema.get("precision") else format(number, "f")
    if kind == YEAR:
        year = read(1)[0]
        return year + 1900 if year else 0
    if kind == DATE:
        return _date(read)
    if kind == DATETIME2:
        return _datetime(read, meta.fsp)
    if kind == TIMESTAMP2:
        return _timestamp(read, meta.fsp)
    if kind == TIME2:
        return _time(read, meta.fsp)
    if kind == BIT:
        value = _big(read((meta.bits + 7) // 8))
        return decimal.Decimal(value) if info.type.arrow == "decimal(20,0)" else value
    if kind == ENUM:
        index = _little(read(meta.size))
        labels = _labels(info, "x-mysql-enum")
        return labels[index - 1] if 0 < index <= len(labels) else ""
    if kind == SET:
        mask = _little(read(meta.size))
        members = _labels(info, "x-mysql-set")
        return ",".join(m for i, m in enumerate(members) if mask >> i & 1)
    if kind in (VARCHAR, VAR_STRING, STRING):
        size = 2 if meta.max_length > 255 else 1
        return _bytes_or_text(read(_little(read(size))), column)
    if kind in (BLOB, GEOMETRY):
        return _bytes_or_text(read(_little(read(meta.length_size))), column)
    if kind == JSON:  # MySQL's binary JSON (MariaDB's JSON is a LONGTEXT: a BLOB above)
        from pymysqlreplication.json_binary import parse_json

        data = read(_little(read(meta.length_size)))
        return _json_text(parse_json(data[0], data[1:])) if data else "null"
    raise _Undecodable(kind)


class _Undecodable(Exception):
    """A storage type this decoder does not read (old-format temporals, GEOMETRY)."""


def _json_text(value: Any) -> str:
    def plain(item: Any) -> Any:
        if isinstance(item, bytes):
            return item.decode("utf-8")
        if isinstance(item, dict):
            return {plain(k): plain(v) for k, v in item.items()}
        if isinstance(item, list):
            return [plain(v) for v in item]
        return item

    return json.dumps(plain(value), ensure_ascii=False, default=str)


def _bit(bitmap: bytes, index: int) -> bool:
    return bool(bitmap[index // 8] >> (index % 8) & 1)


def read_image(read: Read, columns: Sequence[ImageColumn], present: bytes
               ) -> tuple[dict[str, Any], list[Note]]:
    """One row image: the values of the columns ``present`` marks, and the notes of the
    values no column type holds (zero and partial dates)."""
    count = sum(_bit(present, i) for i in range(len(columns)))
    nulls = read((count + 7) // 8)
    row: dict[str, Any] = {}
    notes: list[Note] = []
    seen = 0
    for index, column in enumerate(columns):
        if not _bit(present, index):
            continue
        null = _bit(nulls, seen)
        seen += 1
        name = column.info.name
        if null:
            row[name] = None
            continue
        try:
            row[name] = _value(read, column)
            if not column.info.type.mapped:
                row[name] = None
                notes.append({"field": name, "reason": UNMAPPED,
                              "value": column.info.type.mysql_type})
        except _Misfit as misfit:
            row[name] = None
            notes.append({"field": name, "reason": REASON, "value": misfit.text})
        except _Undecodable as exc:
            raise ConnectorError(
                f"column {name!r} ({column.info.type.mysql_type}) is stored in the binary "
                f"log as type {exc.args[0]}, which change data capture does not decode") from exc
    return row, notes
