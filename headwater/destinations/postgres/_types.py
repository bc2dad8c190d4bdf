"""PostgreSQL column types from Arrow types, and Arrow types of an existing table's columns.

Why both ways: ``prepare`` creates a stream's table from its Arrow data schema
(numeric(p,s) for decimals, timestamptz, jsonb for structs, lists, maps and
open values...), and reads an existing table back in Arrow terms, so the
shared rule of ``_existing_table.py`` decides whether a table Headwater did not
create can take the stream's values, and a column whose type changed keeps the
table's type with the engine noting the values that do not fit it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pyarrow as pa

from headwater.table_schema import LOGICAL_KEY, VARIANT, json_kind

JSONB = "jsonb"


def pg_type(field: pa.Field) -> str:
    """The column type a stream's field gets in a table Headwater creates."""
    kind = field.type
    if json_kind(field) == VARIANT:
        return JSONB
    if pa.types.is_boolean(kind):
        return "boolean"
    if pa.types.is_integer(kind):
        bits = kind.bit_width + (0 if pa.types.is_signed_integer(kind) else 1)
        return "smallint" if bits <= 16 else "integer" if bits <= 32 else \
            "bigint" if bits <= 64 else "numeric(20,0)"
    if pa.types.is_floating(kind):
        return "double precision" if kind.bit_width == 64 else "real"
    if pa.types.is_decimal(kind):
        return f"numeric({kind.precision},{kind.scale})"
    if pa.types.is_timestamp(kind):
        return "timestamp with time zone" if kind.tz else "timestamp without time zone"
    if pa.types.is_date(kind):
        return "date"
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return "bytea"
    if pa.types.is_struct(kind) or pa.types.is_map(kind) or pa.types.is_list(kind) \
            or pa.types.is_large_list(kind):
        return JSONB
    return "text"


#: Arrow types of PostgreSQL's types (``format_type`` text) whose binary format pgpq writes.
ARROW_TYPES: dict[str, pa.DataType] = {
    "smallint": pa.int16(), "integer": pa.int32(), "bigint": pa.int64(),
    "real": pa.float32(), "double precision": pa.float64(), "boolean": pa.bool_(),
    "text": pa.string(), "bytea": pa.binary(), "date": pa.date32(),
    "timestamp with time zone": pa.timestamp("us", tz="UTC"),
    "timestamp without time zone": pa.timestamp("us"),
}
_NUMERIC = re.compile(r"numeric\((\d+),(\d+)\)")
_SIZED_TEXT = re.compile(r"(?:character varying|character)\((\d+)\)")


@dataclass(frozen=True)
class TableColumn:
    """One column of an existing table: its name, ``format_type`` text and nullability."""

    name: str
    type: str
    nullable: bool = True

    @property
    def max_length(self) -> int | None:
        """The longest text a ``varchar(n)``/``char(n)`` column takes, else None."""
        sized = _SIZED_TEXT.fullmatch(self.type)
        return int(sized.group(1)) if sized else None

    def arrow_field(self) -> pa.Field:
        """The column in Arrow terms: jsonb and json as JSON text marked VARIANT (they
        hold any value); a type Arrow has no counterpart for as ``null``, which holds
        nothing a stream writes, so a shared one is reported rather than guessed at."""
        if self.type in (JSONB, "json"):
            return pa.field(self.name, pa.string(), self.nullable, {LOGICAL_KEY: VARIANT})
        kind = ARROW_TYPES.get(self.type)
        numeric = _NUMERIC.fullmatch(self.type)
        if numeric and int(numeric.group(1)) <= 38:
            kind = pa.decimal128(int(numeric.group(1)), int(numeric.group(2)))
        elif self.type == "numeric":  # unconstrained: the widest decimal Arrow's readers take
            kind = pa.decimal128(38, 18)
        elif self.max_length is not None or self.type.startswith("character"):
            kind = pa.string()
        return pa.field(self.name, kind if kind is not None else pa.null(), self.nullable)


def written_type(stream: pa.Field, column: TableColumn) -> pa.Field:
    """The field a stream's column is written with into an existing table's ``column``.

    A jsonb column takes any value (it is written as JSON), and so does a type
    Arrow cannot name; any other column keeps its own type, and the engine notes
    each value that does not fit it (DESIGN.md's schema evolution).
    """
    table = column.arrow_field()
    if json_kind(table) == VARIANT or pa.types.is_null(table.type) \
            or table.type.equals(stream.type):
        return stream
    return pa.field(stream.name, table.type)


__all__ = ["ARROW_TYPES", "JSONB", "TableColumn", "pg_type", "written_type"]
