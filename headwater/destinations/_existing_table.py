"""Whether a table Headwater did not create can take a stream's rows, decided before any write.

Why: a destination that finds a table where a stream's table should be adopts
it.  For a table Headwater made (it has every ``_hw_*`` metadata column), the
stream's schema may have changed since: new columns are added, and a column
whose type changed keeps the table's type, its misfit values recorded per row
(DESIGN.md's schema evolution), which is how a stream keeps syncing into the
table it has always filled.  A table someone else made has no such history: an
``id string`` column turns every id into text, an ``amount int`` column nulls
every fractional amount, and once the first write added the ``_hw_*`` columns
beside the old rows the table can no longer be left as it was.  So before the
first write into such a table, every column the stream and the table share
must be one whose table type holds every value of the stream's type
(:func:`misfits`); anything else is refused with the column, both types and
what to do, and nothing is changed.

"Holds every value" is exact: ``int -> long``, ``float -> double``,
``decimal(p, s) -> decimal(P, S)`` with ``S >= s`` and ``P - S >= p - s``,
integers into a decimal or a floating point type wide enough for all of them,
timestamps into the same kind (with or without time zone) at the same or a
finer unit short of nanoseconds (whose range is narrower), text into text,
anything into a VARIANT.  A column the table has and the stream lacks is left
null, so it must be optional; a column the stream has and the table lacks is
added (as the destination's schema evolution adds new columns), and so is a
field a struct lacks where the destination adds nested fields (Delta).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import pyarrow as pa

from headwater.errors import ConfigError
from headwater.table_schema import META_NAMES, VARIANT, json_kind


@dataclass(frozen=True)
class Misfit:
    """One column of an existing table that cannot take the stream's values as they are."""

    #: The column's dotted path (``address.zip``; a list's items are ``items.element``).
    column: str
    #: The stream's type and the table's, as a person reads them (``long``, ``string``).
    stream_type: str
    table_type: str
    #: Why, when it is not a type that cannot hold the values (a required column).
    why: str = ""

    def describe(self) -> str:
        if self.why:
            return f"{self.column}: {self.why}"
        return (f"{self.column}: the stream's {self.stream_type} does not fit the table's "
                f"{self.table_type}")


def is_headwater_table(column_names: Iterable[str]) -> bool:
    """Whether a table has every metadata column Headwater gives the tables it creates."""
    return set(META_NAMES) <= set(column_names)


def misfits(table: pa.Schema, stream: pa.Schema, *,
            adds_nested_fields: bool) -> list[Misfit]:
    """The columns of ``table`` that cannot hold ``stream``'s values (empty: it fits).

    ``table`` is the existing table's schema in Arrow terms (a VARIANT column is
    a string field marked :data:`~headwater.table_schema.VARIANT`); ``stream``
    the columns the stream writes (its data columns and the metadata columns).
    ``adds_nested_fields``: whether the destination adds a field a struct lacks.
    """
    found: list[Misfit] = []
    written = set(stream.names)
    for field in table:
        if field.name not in written and not field.nullable:
            found.append(Misfit(field.name, "(no such column)", label(field.type),
                                why="the table requires it (NOT NULL) and the stream has no "
                                    "such column"))
    for field in stream:
        if field.name in table.names:
            _compare(field.name, table.field(field.name), field, found, adds_nested_fields)
    return found


def refuse(misfits: list[Misfit], *, table: str, stream: str) -> None:
    """Raise the ConfigError that says which columns do not fit and what to do (none: return)."""
    if not misfits:
        return
    raise ConfigError(
        f"stream {stream!r}: the {table} exists, was not created by Headwater (it lacks the "
        "_hw_* columns), and cannot take the stream's rows: "
        f"{'; '.join(m.describe() for m in misfits)}. Nothing "
        "was written. Rename or drop that table (or write the stream to another one: "
        "table_prefix, namespace, path), change the column in the table (a type that holds "
        "the stream's values, or nullable), or declare the column's type in the source's "
        "schema so it matches the table's", stream=stream)


def _compare(path: str, table: pa.Field, stream: pa.Field, found: list[Misfit],
             adds_nested_fields: bool) -> None:
    if not table.nullable:
        found.append(Misfit(path, label(stream.type), label(table.type),
                            why=f"the table requires it (NOT NULL, {label(table.type)}), and "
                                "a value that does not fit its type is written as null"))
        return
    if json_kind(table) == VARIANT:
        return  # a VARIANT holds any value
    want, have = stream.type, table.type
    if pa.types.is_struct(want) and pa.types.is_struct(have):
        for child in want:
            index = have.get_field_index(child.name)
            if index < 0:
                if not adds_nested_fields:
                    found.append(Misfit(f"{path}.{child.name}", label(child.type),
                                        "(no such field)",
                                        why=f"the table's struct {path} has no field "
                                            f"{child.name}, and this destination does not "
                                            "add fields to a struct"))
                continue
            _compare(f"{path}.{child.name}", have.field(index), child, found,
                     adds_nested_fields)
        return
    if _is_list(want) and _is_list(have):
        _compare(f"{path}.element", have.value_field, want.value_field.with_nullable(True),
                 found, adds_nested_fields)
        return
    if pa.types.is_map(want) and pa.types.is_map(have):
        _compare(f"{path}.key", have.key_field.with_nullable(True),
                 want.key_field.with_nullable(True), found, adds_nested_fields)
        _compare(f"{path}.value", have.item_field, want.item_field.with_nullable(True),
                 found, adds_nested_fields)
        return
    if not holds(have, want):
        found.append(Misfit(path, label(want), label(have)))


def _is_list(kind: pa.DataType) -> bool:
    return pa.types.is_list(kind) or pa.types.is_large_list(kind)


#: Decimal digits every value of an integer type needs, by (bit width, signed).
_INT_DIGITS = {(8, True): 3, (16, True): 5, (32, True): 10, (64, True): 19,
               (8, False): 3, (16, False): 5, (32, False): 10, (64, False): 20}
#: Integer bits a floating point type holds exactly (its significand's), by bit width.
_EXACT_INT_BITS = {16: 11, 32: 24, 64: 53}
#: Timestamp units, coarsest first.
_UNITS = ("s", "ms", "us", "ns")


def holds(table: pa.DataType, stream: pa.DataType) -> bool:
    """Whether every value of the (scalar) ``stream`` type is a value of the ``table`` type."""
    if pa.types.is_null(stream) or table.equals(stream):
        return True
    if pa.types.is_integer(stream):
        bits, signed = stream.bit_width, pa.types.is_signed_integer(stream)
        if pa.types.is_integer(table):
            if pa.types.is_signed_integer(table):
                return table.bit_width >= bits + (0 if signed else 1)
            return not signed and table.bit_width >= bits
        if pa.types.is_floating(table):
            return _EXACT_INT_BITS[table.bit_width] >= bits - (1 if signed else 0)
        if pa.types.is_decimal(table):
            return table.precision - table.scale >= _INT_DIGITS[(bits, signed)]
        return False
    if pa.types.is_floating(stream):
        return pa.types.is_floating(table) and table.bit_width >= stream.bit_width
    if pa.types.is_decimal(stream):
        return (pa.types.is_decimal(table) and table.scale >= stream.scale
                and table.precision - table.scale >= stream.precision - stream.scale)
    if pa.types.is_timestamp(stream):
        if not pa.types.is_timestamp(table) or (table.tz is None) != (stream.tz is None):
            return False
        finer = _UNITS.index(table.unit) - _UNITS.index(stream.unit)
        return finer == 0 or (finer > 0 and table.unit != "ns")
    if pa.types.is_date(stream):
        return pa.types.is_date(table)
    if pa.types.is_string(stream) or pa.types.is_large_string(stream):
        return pa.types.is_string(table) or pa.types.is_large_string(table)
    if pa.types.is_binary(stream) or pa.types.is_large_binary(stream):
        return pa.types.is_binary(table) or pa.types.is_large_binary(table)
    return False


_NAMES = {pa.int8(): "byte", pa.int16(): "short", pa.int32(): "int", pa.int64(): "long",
          pa.float16(): "half float", pa.float32(): "float", pa.float64(): "double",
          pa.bool_(): "boolean", pa.string(): "string", pa.large_string(): "string",
          pa.binary(): "binary", pa.large_binary(): "binary", pa.date32(): "date",
          pa.date64(): "date", pa.null(): "null"}


def label(kind: pa.DataType) -> str:
    """A type as a person reads it, in the names Iceberg and Spark share (``long``)."""
    if kind in _NAMES:
        return _NAMES[kind]
    if pa.types.is_decimal(kind):
        return f"decimal({kind.precision},{kind.scale})"
    if pa.types.is_timestamp(kind):
        zone = "with time zone" if kind.tz else "without time zone"
        return f"timestamp {zone}" + ("" if kind.unit == "us" else f" ({kind.unit})")
    if _is_list(kind):
        return f"list<{label(kind.value_type)}>"
    if pa.types.is_map(kind):
        return f"map<{label(kind.key_type)}, {label(kind.item_type)}>"
    if pa.types.is_struct(kind):
        return "struct<" + ", ".join(f"{f.name}: {label(f.type)}" for f in kind) + ">"
    return str(kind)


__all__ = ["Misfit", "holds", "is_headwater_table", "label", "misfits", "refuse"]
