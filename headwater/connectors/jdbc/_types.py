"""Spark's types of a JDBC table (its dialect's mapping) -> the stream's JSON Schema.

Spark's JDBC dialects decide how a database type arrives (PostgreSQL's
``numeric(10,2)`` as ``decimal(10,2)``, MariaDB's ``DATETIME`` as ``timestamp``,
SQL Server's ``uniqueidentifier`` as ``string``); Headwater declares the same
type for the table, so nothing is cast twice.  What Spark reads as something
no JSON Schema type holds (arrays of structs, maps, intervals) lands as its
text, and is named in the schema's description.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql.types import DataType

__all__ = ["ColumnType", "map_spark_type"]

MAX_DECIMAL_PRECISION = 38


@dataclass(frozen=True)
class ColumnType:
    """One column: its JSON Schema, and what it can do for planning."""

    spark_type: str
    schema: dict[str, Any]
    #: "integer" or "datetime" when the column can be a cursor or a split column.
    cursor_kind: str | None = None
    #: False: carried as its text (Spark reads it as something a table cannot hold).
    mapped: bool = True


def map_spark_type(data_type: DataType) -> ColumnType:
    from pyspark.sql import types as T

    name = data_type.simpleString()
    if isinstance(data_type, T.ByteType | T.ShortType | T.IntegerType | T.LongType):
        return ColumnType(name, _nullable({"type": "integer"}), cursor_kind="integer")
    if isinstance(data_type, T.DecimalType):
        if data_type.scale == 0 and data_type.precision <= 18:
            return ColumnType(name, _nullable({"type": "integer"}), cursor_kind="integer")
        return ColumnType(name, _nullable({"type": "number", "format": "decimal",
                                           "precision": data_type.precision,
                                           "scale": data_type.scale}))
    if isinstance(data_type, T.FloatType | T.DoubleType):
        return ColumnType(name, _nullable({"type": "number"}))
    if isinstance(data_type, T.BooleanType):
        return ColumnType(name, _nullable({"type": "boolean"}))
    if isinstance(data_type, T.StringType | T.VarcharType | T.CharType):
        return ColumnType(name, _nullable({"type": "string"}))
    if isinstance(data_type, T.DateType):
        return ColumnType(name, _nullable({"type": "string", "format": "date"}))
    if isinstance(data_type, T.TimestampNTZType):
        return ColumnType(name, _nullable({"type": "string", "format": "date-time",
                                           "airbyte_type": "timestamp_without_timezone"}),
                          cursor_kind="datetime")
    if isinstance(data_type, T.TimestampType):
        return ColumnType(name, _nullable({"type": "string", "format": "date-time",
                                           "airbyte_type": "timestamp_with_timezone"}),
                          cursor_kind="datetime")
    if isinstance(data_type, T.BinaryType):
        return ColumnType(name, _nullable({"type": "string", "contentEncoding": "base64"}))
    if isinstance(data_type, T.ArrayType) and not isinstance(
            data_type.elementType, T.ArrayType | T.StructType | T.MapType):
        item = map_spark_type(data_type.elementType)
        if item.mapped:
            return ColumnType(name, {"type": ["array", "null"], "items": item.schema})
    return ColumnType(name, {"type": ["string", "null"], "description":
                             f"Spark reads it as {name}; carried as its text"}, mapped=False)


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    return {**schema, "type": [schema["type"], "null"]}
