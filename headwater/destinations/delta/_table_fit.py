"""Whether an existing Delta table Headwater did not create can take a stream's rows.

The rule is the destinations' shared one (``_existing_table.py``); this module
puts a Delta table's schema (Spark's types, from its log) in its Arrow terms.
Delta's schema evolution adds top-level columns and fields a struct lacks
(``ALTER TABLE ... ADD COLUMNS``), so only the columns both have are compared.
Read from delta-rs's state (no Spark: ``headwater check``) or from Spark's
reader (a sync on Spark's writer), before the table changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from headwater.destinations._existing_table import is_headwater_table, misfits, refuse
from headwater.table_schema import LOGICAL_KEY, META_FIELDS, VARIANT

if TYPE_CHECKING:
    from pyspark.sql.types import StructField


def arrow_field(field: StructField) -> pa.Field:
    """A Delta table's column as an Arrow field: a VARIANT as JSON text marked VARIANT.

    A type Arrow has no counterpart for (an interval) becomes ``null``, which
    holds nothing a stream writes: such a shared column is reported, not guessed at.
    """
    from pyspark.sql.pandas.types import to_arrow_type
    from pyspark.sql.types import VariantType

    if isinstance(field.dataType, VariantType):
        return pa.field(field.name, pa.string(), nullable=field.nullable,
                        metadata={LOGICAL_KEY: VARIANT})
    try:
        kind = to_arrow_type(field.dataType, timezone="UTC")
    except Exception:
        kind = pa.null()
    return pa.field(field.name, kind, nullable=field.nullable)


def columns_of(schema_json: Mapping[str, Any]) -> pa.Schema:
    """A Delta table's columns (its schema in Spark's JSON form) in Arrow terms."""
    from pyspark.sql.types import StructType

    return pa.schema([arrow_field(f) for f in StructType.fromJson(dict(schema_json))])


def refuse_misfits(columns: Iterable[StructField], data_schema: pa.Schema, location: str,
                   stream: str) -> None:
    """Raise a ConfigError when the table at ``location`` (its ``columns``) is not
    Headwater's and cannot take the stream's rows (``data_schema``, its data columns)."""
    table = pa.schema([arrow_field(f) for f in columns])
    if is_headwater_table(table.names):
        return
    refuse(misfits(table, pa.schema(META_FIELDS + list(data_schema)), adds_nested_fields=True),
           table=f"Delta table at {location}", stream=stream)


__all__ = ["arrow_field", "columns_of", "refuse_misfits"]
