"""MySQL/MariaDB column types -> JSON Schema (the table's types) and how the reader selects them.

The rule is "lose nothing": every column lands in a type that holds its values
exactly, or as text the server itself wrote.  The reader (connectorx, binary
protocol, decoded into Arrow in Rust) selects some columns through a cast, where
its own decoding would lose or refuse a value:

==================================  ===================================  =====================
MySQL / MariaDB                      JSON Schema                          table (Arrow / Delta)
==================================  ===================================  =====================
TINYINT..BIGINT, unsigned below      integer                              int64 / bigint
BIGINT (TINYINT(1) included)
BIGINT UNSIGNED                      number, decimal(20, 0)               decimal(20, 0)
DECIMAL(p, s), p <= 38               number, decimal(p, s) (read as text) decimal(p, s)
DECIMAL(p, s), p > 38                string, format decimal (its text)    string
FLOAT, DOUBLE                        number                               double (a FLOAT's
                                                                          exact single value)
BIT(n)                               integer (n < 64), decimal(20, 0)     bigint / decimal
YEAR                                 integer                              bigint
DATE                                 string, format date                  date
DATETIME(fsp)                        date-time, without time zone         timestamp_ntz
TIMESTAMP(fsp)                       date-time (UTC)                      timestamp (UTC)
TIME(fsp)                            string: ``[-]HHH:MM:SS[.ffffff]``    string
CHAR, VARCHAR, TEXT (utf8mb4)        string                               string
JSON (MySQL's type, MariaDB's alias) string, contentMediaType json       string (its text)
BINARY, VARBINARY, BLOB              string, contentEncoding base64       binary
ENUM                                 string (labels in ``x-mysql-enum``)  string
SET                                  string (members joined by commas)    string
anything else (spatial, ...)         string (the server's text)           string, *reported*
==================================  ===================================  =====================

``TINYINT(1)`` is an integer, not a boolean: the column holds -128..127 and a
boolean would lose every value but 0 and 1.  DATETIME is a wall-clock time with no
zone (it lands naive, as written); TIMESTAMP is an instant, which the reading
session (``time_zone = '+00:00'``) returns in UTC.  connectorx's decimal (Rust's
28-digit decimal) refuses DECIMAL(65, 30) and rounds scales to 10, and its TIME
refuses negative or > 24 h values, so those travel as the server's text and the
table's typing pass (or nothing) turns them into their type.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["MAX_DECIMAL_PRECISION", "ColumnType", "map_type", "quote_ident"]

#: Spark's (and Delta's) largest decimal precision.
MAX_DECIMAL_PRECISION = 38

_INTEGERS = {"tinyint", "smallint", "mediumint", "int", "integer", "bigint"}
_TEXTS = {"char", "varchar", "tinytext", "text", "mediumtext", "longtext"}
_BINARIES = {"binary", "varbinary", "tinyblob", "blob", "mediumblob", "longblob"}
_UNSIGNED_64 = {"type": "number", "format": "decimal", "precision": 20, "scale": 0}
_LABEL = re.compile(r"'((?:[^']|'')*)'")

#: How the reader selects a column: itself, the server's text of it, or (BIT) its
#: unsigned integer value.
Selection = Literal["plain", "text", "unsigned"]


@dataclass(frozen=True)
class ColumnType:
    """How one column is read and typed.

    ``mysql_type`` is the column's full type (``COLUMN_TYPE``: ``bigint(20) unsigned``);
    ``mapped`` is false when the type had no mapping and the column is carried as text
    (reported by ``discover`` and in the schema's description).
    """

    mysql_type: str
    schema: dict[str, Any]
    selection: Selection = "plain"
    mapped: bool = True
    #: ``"integer"`` or ``"datetime"`` when the column can be an incremental cursor.
    cursor_kind: str | None = None
    #: True when the column can be split into key ranges (an integer or text).
    splittable: bool = False
    #: The Arrow type the reader casts its column to (``None``: as connectorx gives it).
    arrow: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def select(self, column: str) -> str:
        """The expression the reader selects for this column, aliased to its name."""
        ident = quote_ident(column)
        if self.selection == "text":
            return f"CAST({ident} AS CHAR) AS {ident}"
        if self.selection == "unsigned":
            return f"CAST({ident} AS UNSIGNED) AS {ident}"
        return ident


def quote_ident(name: str) -> str:
    """A MySQL identifier in backquotes (a backquote inside doubled)."""
    return "`" + name.replace("`", "``") + "`"


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    declared = schema.get("type")
    if isinstance(declared, str):
        schema = {**schema, "type": [declared, "null"]}
    return schema


def map_type(data_type: str, column_type: str, precision: int | None, scale: int | None,
             *, is_json: bool = False) -> ColumnType:
    """The mapping of one column from ``information_schema.COLUMNS``: ``DATA_TYPE``
    (``bigint``), ``COLUMN_TYPE`` (``bigint(20) unsigned``), ``NUMERIC_PRECISION``
    and ``NUMERIC_SCALE``; ``is_json`` for MariaDB's JSON (a LONGTEXT with a
    ``JSON_VALID`` check)."""
    column = _scalar(data_type.lower(), column_type.lower(), precision, scale, is_json)
    return ColumnType(mysql_type=column.mysql_type, schema=_nullable(column.schema),
                      selection=column.selection, mapped=column.mapped,
                      cursor_kind=column.cursor_kind, splittable=column.splittable,
                      arrow=column.arrow)


def _scalar(name: str, full: str, precision: int | None, scale: int | None,
            is_json: bool) -> ColumnType:
    unsigned = "unsigned" in full
    if name in _INTEGERS:
        if name == "bigint" and unsigned:
            # Up to 2^64 - 1: more than a bigint holds, exactly a decimal(20, 0).
            return ColumnType(full, dict(_UNSIGNED_64), cursor_kind="integer", splittable=True,
                              arrow="decimal(20,0)")
        return ColumnType(full, {"type": "integer"}, cursor_kind="integer", splittable=True)
    if name == "decimal":
        p, s = precision or 10, scale or 0
        if p <= MAX_DECIMAL_PRECISION:
            return ColumnType(full, {"type": "number", "format": "decimal", "precision": p,
                                     "scale": s}, selection="text")
        return ColumnType(full, {"type": "string", "format": "decimal"}, selection="text")
    if name in {"float", "double", "real"}:
        return ColumnType(full, {"type": "number"})
    if name == "bit":
        if (precision or 1) < 64:
            return ColumnType(full, {"type": "integer"}, selection="unsigned")
        return ColumnType(full, dict(_UNSIGNED_64), selection="unsigned",
                          arrow="decimal(20,0)")
    if name == "year":
        return ColumnType(full, {"type": "integer"})
    if name == "date":
        return ColumnType(full, {"type": "string", "format": "date"})
    if name == "datetime":
        return ColumnType(full, {"type": "string", "format": "date-time",
                                 "airbyte_type": "timestamp_without_timezone"},
                          cursor_kind="datetime")
    if name == "timestamp":
        return ColumnType(full, {"type": "string", "format": "date-time",
                                 "airbyte_type": "timestamp_with_timezone"},
                          cursor_kind="datetime", arrow="utc")
    if name == "time":
        return ColumnType(full, {"type": "string", "description": "MySQL TIME: a duration "
                                 "[-]HHH:MM:SS[.ffffff] (-838:59:59 to 838:59:59)"},
                          selection="text")
    if name == "json" or (is_json and name in _TEXTS):
        return ColumnType(full, {"type": "string", "contentMediaType": "application/json"},
                          selection="text")
    if name in _TEXTS:
        # A text key splits too, in its collation's order (``_text_keys.py``).
        return ColumnType(full, {"type": "string"}, splittable=True)
    if name in _BINARIES:
        return ColumnType(full, {"type": "string", "contentEncoding": "base64"},
                          arrow="binary")
    if name == "enum":
        labels = [m.replace("''", "'") for m in _LABEL.findall(full)]
        return ColumnType(full, {"type": "string", "x-mysql-enum": labels})
    if name == "set":
        members = [m.replace("''", "'") for m in _LABEL.findall(full)]
        return ColumnType(full, {"type": "string", "description": "MySQL SET: its members "
                                 "joined by commas", "x-mysql-set": members})
    return ColumnType(full, {"type": "string", "description": f"MySQL type {full} has no "
                             "mapping; carried as its text form"}, selection="text",
                      mapped=False)
