"""PostgreSQL column types -> JSON Schema (the table's types) and the SELECT expression.

The rule is "lose nothing": every column lands, either in a type that holds
its values exactly or as text PostgreSQL itself wrote.  Each mapping names
the expression the reader selects, so the reader (ADBC's binary COPY) and
change data capture (pgoutput's text values) produce the same values:

=================================  ====================================  ========================
PostgreSQL                          JSON Schema                           table (Arrow / Delta)
=================================  ====================================  ========================
smallint, integer, bigint           integer                               int64 / bigint
numeric(p, s), p <= 38              number, format decimal                decimal(p, s)
numeric (no or larger precision)    string, format decimal (its text)     string
real, double precision              number                                float64 / double
boolean                             boolean                               bool
text, varchar, char, name, citext   string                                string
date                                string, format date                   date
timestamp                           date-time, timestamp_without_timezone timestamp_ntz
timestamptz                         date-time (UTC)                       timestamp (UTC)
time, timetz                        string, format time (ISO text)        string
interval                            string, format duration (ISO 8601)    string
uuid                                string, format uuid                   string
json, jsonb                         string, contentMediaType json         string
bytea                               string, contentEncoding base64        binary
enum                                string with its labels as ``enum``    string
1-d arrays of the scalar types      array of the element's mapping        array<...>
anything else                       string (the type's text output)       string, *reported*
=================================  ====================================  ========================

A value the table's type cannot hold (an infinite or BC date, a timestamp past
year 9999, a multi-dimensional array in an array column) lands as null with a
note holding PostgreSQL's text (:mod:`._misfits`), by the reader and by change
data capture alike.

Text forms depend on session settings, so every reading session sets
``TimeZone=UTC``, ``DateStyle=ISO`` and ``IntervalStyle=iso_8601``
(:data:`SESSION_SETTINGS`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from psycopg import sql

__all__ = ["MAX_DECIMAL_PRECISION", "SESSION_SETTINGS", "ColumnType", "map_type"]

#: Spark's (and Delta's) largest decimal precision.
MAX_DECIMAL_PRECISION = 38

#: Settings that make PostgreSQL's text output of dates, times and intervals canonical.
SESSION_SETTINGS = {"TimeZone": "UTC", "DateStyle": "ISO", "IntervalStyle": "iso_8601"}

_INTEGERS = {"int2", "int4", "int8"}
_FLOATS = {"float4", "float8"}
_TEXTS = {"text", "varchar", "bpchar", "name", "citext", "char"}
#: Element types an array may have and stay a typed list (ADBC reads these natively).
_ARRAY_ELEMENTS = _INTEGERS | _FLOATS | {"bool", "text", "varchar", "bpchar", "name"}


@dataclass(frozen=True)
class ColumnType:
    """How one column is read and typed.

    ``schema`` is the JSON Schema property; ``as_text`` says the reader selects
    ``column::text`` rather than the column itself; ``mapped`` is false when
    PostgreSQL's type had no mapping and the column is carried as text (these
    are reported by ``discover`` and in the schema's description).
    """

    pg_type: str
    schema: dict[str, Any]
    as_text: bool = False
    mapped: bool = True
    #: ``"integer"`` or ``"datetime"`` when the column can be an incremental cursor.
    cursor_kind: str | None = None
    #: True when a single column of this type can be split into key ranges.
    splittable: bool = False

    def select(self, column: str) -> sql.Composable:
        """The expression the reader selects for this column, aliased to its name."""
        ident = sql.Identifier(column)
        if self.as_text:
            return sql.SQL("{}::text AS {}").format(ident, ident)
        return ident


#: PostgreSQL's JSON types: their text, or with ``json_as: variant`` typed JSON.
JSON_TYPES = frozenset({"json", "jsonb"})


def as_variant(column: ColumnType) -> ColumnType:
    """A json or jsonb column as typed JSON: an untyped property (any JSON value), which
    lands as VARIANT (:func:`headwater.table_schema.is_open`).  The reader still selects
    the column's text, so the value arrives as PostgreSQL's own JSON text and Spark
    parses it; other columns are returned unchanged."""
    if column.pg_type not in JSON_TYPES:
        return column
    return ColumnType(pg_type=column.pg_type, as_text=True, schema={
        "description": f"PostgreSQL {column.pg_type}: any JSON value, typed (VARIANT)"})


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    declared = schema.get("type")
    if isinstance(declared, str):
        schema = {**schema, "type": [declared, "null"]}
    return schema


def map_type(type_name: str, type_kind: str, typmod: int, element: str | None = None,
             enum_labels: list[str] | None = None, ndims: int = 0) -> ColumnType:
    """The mapping of one column.

    ``type_name`` is ``pg_type.typname`` (``int4``, ``_int4`` for arrays),
    ``type_kind`` is ``pg_type.typtype`` (``b`` base, ``e`` enum, ``d`` domain
    already resolved by the caller), ``typmod`` is ``pg_attribute.atttypmod``,
    ``element`` the element's typname for arrays.
    """
    column = _scalar(type_name, type_kind, typmod, enum_labels)
    if column is not None:
        return ColumnType(pg_type=column.pg_type, schema=_nullable(column.schema),
                          as_text=column.as_text, mapped=column.mapped,
                          cursor_kind=column.cursor_kind, splittable=column.splittable)
    if element is not None and element in _ARRAY_ELEMENTS and ndims <= 1:
        item = _scalar(element, "b", -1, None)
        assert item is not None
        return ColumnType(pg_type=type_name, schema={"type": ["array", "null"],
                                                     "items": _nullable(item.schema)})
    if element is not None:
        # Other arrays (and multi-dimensional ones) keep PostgreSQL's exact JSON form.
        return ColumnType(pg_type=type_name, as_text=True, schema={
            "type": ["string", "null"], "contentMediaType": "application/json",
            "description": f"PostgreSQL {type_name.lstrip('_')}[] as JSON text"})
    return ColumnType(pg_type=type_name, as_text=True, mapped=False, schema={
        "type": ["string", "null"],
        "description": f"PostgreSQL type {type_name} has no mapping; carried as its text form"})


def _scalar(name: str, kind: str, typmod: int, labels: list[str] | None) -> ColumnType | None:
    if kind == "e":
        return ColumnType(name, {"type": "string", "enum": list(labels or [])}, as_text=True)
    if name in _INTEGERS:
        return ColumnType(name, {"type": "integer"}, cursor_kind="integer", splittable=True)
    if name == "numeric":
        if typmod >= 4:
            precision = ((typmod - 4) >> 16) & 0xFFFF
            scale = (typmod - 4) & 0xFFFF
            if precision <= MAX_DECIMAL_PRECISION and scale <= precision:
                return ColumnType(name, {"type": "number", "format": "decimal",
                                         "precision": precision, "scale": scale},
                                  as_text=True)
        return ColumnType(name, {"type": "string", "format": "decimal"}, as_text=True)
    if name in _FLOATS:
        return ColumnType(name, {"type": "number"})
    if name == "bool":
        return ColumnType(name, {"type": "boolean"})
    if name in _TEXTS:
        return ColumnType(name, {"type": "string"})
    if name == "date":
        return ColumnType(name, {"type": "string", "format": "date"})
    if name == "timestamp":
        return ColumnType(name, {"type": "string", "format": "date-time",
                                 "airbyte_type": "timestamp_without_timezone"},
                          cursor_kind="datetime")
    if name == "timestamptz":
        return ColumnType(name, {"type": "string", "format": "date-time",
                                 "airbyte_type": "timestamp_with_timezone"},
                          cursor_kind="datetime")
    if name in {"time", "timetz"}:
        return ColumnType(name, {"type": "string", "format": "time"}, as_text=True)
    if name == "interval":
        return ColumnType(name, {"type": "string", "format": "duration"}, as_text=True)
    if name == "uuid":
        return ColumnType(name, {"type": "string", "format": "uuid"}, as_text=True)
    if name in {"json", "jsonb"}:
        return ColumnType(name, {"type": "string", "contentMediaType": "application/json"},
                          as_text=True)
    if name == "bytea":
        return ColumnType(name, {"type": "string", "contentEncoding": "base64"})
    return None
