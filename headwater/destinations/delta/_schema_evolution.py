"""A Delta table's columns as a sync finds them and changes them.

New columns are added (top level and inside structs: :func:`nested_additions`); a
column the table has keeps the table's type, and the stream's rows are typed as the
table types them (:func:`_table_types`), so a type change is widened or becomes a
per-row note rather than a rewrite.  Columns Delta fills itself (generated, identity,
defaulted) are no columns a stream lost (:func:`_not_filled_by_delta`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import pyarrow as pa

from headwater.destinations.delta import _sql
from headwater.destinations.delta._layout import _properties_to_set
from headwater.destinations.delta._sql import quote, table_ref
from headwater.destinations.delta._stats import STATS_PROPERTY, stats_columns
from headwater.table_schema import JSON_TEXT, LOGICAL_KEY, VARIANT, json_kind

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import DataType, StructField, StructType

    from headwater.plan import TableLayout

#: Column metadata of values Delta fills itself: generated, identity and default columns.
_FILLED_BY_DELTA = ("delta.generationExpression", "delta.identity.start", "CURRENT_DEFAULT")


def _not_filled_by_delta(fields: Iterable[StructField]) -> list[str]:
    """The names of the columns whose values only a writer gives (a generated, identity or
    defaulted column the stream does not write is no column it lost)."""
    return [f.name for f in fields if not any(key in f.metadata for key in _FILLED_BY_DELTA)]


def nested_additions(wanted: Iterable[StructField], existing: Mapping[str, StructField],
                     ) -> list[tuple[list[str], DataType]]:
    """Fields a struct column (or a list of structs) gained: ``(path, Spark type)`` each.

    A later sync's objects may carry a field the table's struct lacks; the
    table's struct gets it (``ALTER TABLE ... ADD COLUMNS (s.new ...)``, a list's
    items are ``s.element``), so its values land instead of becoming notes.  A
    field whose type changed keeps the table's type, as top-level columns do.
    """
    from pyspark.sql.types import ArrayType, StructType

    found: list[tuple[list[str], DataType]] = []

    def walk(path: list[str], want: DataType, have: DataType) -> None:
        if isinstance(want, StructType) and isinstance(have, StructType):
            had = {f.name: f.dataType for f in have.fields}
            for field in want.fields:
                if field.name in had:
                    walk([*path, field.name], field.dataType, had[field.name])
                else:
                    found.append(([*path, field.name], field.dataType))
        elif isinstance(want, ArrayType) and isinstance(have, ArrayType):
            walk([*path, "element"], want.elementType, have.elementType)

    for field in wanted:
        if field.name in existing:
            walk([field.name], field.dataType, existing[field.name].dataType)
    return found


def _table_types(data_schema: pa.Schema, existing: Mapping[str, StructField]) -> pa.Schema:
    """``data_schema`` with each column the table already has typed as the table types it.

    A column of JSON text stays JSON text: VARIANT where the table's column is a
    VARIANT (whatever the stream asks now), text where it is a string (a table
    made before VARIANT, or with ``json_columns``), so the table's type wins.
    """
    from pyspark.sql.pandas.types import to_arrow_type
    from pyspark.sql.types import StringType, VariantType

    fields = []
    for field in data_schema:
        table_type = existing[field.name].dataType if field.name in existing else None
        if isinstance(table_type, VariantType) or (
                json_kind(field) is not None and isinstance(table_type, StringType)):
            kind = VARIANT if isinstance(table_type, VariantType) else JSON_TEXT
            fields.append(pa.field(field.name, pa.string(), metadata={LOGICAL_KEY: kind}))
        elif field.name in existing:
            fields.append(pa.field(
                field.name, to_arrow_type(existing[field.name].dataType, timezone="UTC")))
        else:
            fields.append(field)
    return pa.schema(fields)


def _add_columns(spark: SparkSession, location: str, wanted: StructType,
                 existing: dict[str, StructField], properties: Mapping[str, str],
                 layout: TableLayout) -> dict[str, StructField]:
    """Add the columns and struct fields of ``wanted`` the table at ``location`` lacks
    (``ALTER TABLE ... ADD COLUMNS``), list the new columns among its statistics
    columns, and set the stream's properties it lacks; its columns as they are then.

    ``existing`` and ``properties`` are the table's, as just read.  The caller holds
    the session-conf lock: these are commits without txn options of their own.
    """
    missing = [f for f in wanted if f.name not in existing]
    nested = nested_additions(wanted, existing)
    if missing or nested:
        columns = ", ".join(
            [f"{quote(f.name)} {f.dataType.simpleString()}" for f in missing]
            + [f"{'.'.join(quote(p) for p in path)} {kind.simpleString()}"
               for path, kind in nested])
        spark.sql(f"ALTER TABLE {table_ref(location)} ADD COLUMNS ({columns})")
    changed: dict[str, str] = {}
    if missing and STATS_PROPERTY in properties:
        listed = stats_columns(missing, already=properties[STATS_PROPERTY])
        if listed != properties[STATS_PROPERTY]:
            changed[STATS_PROPERTY] = listed
    # The stream's own properties win over Headwater's statistics list.
    changed.update(_properties_to_set(layout, {**properties, **changed}))
    if changed:
        _sql.set_properties(spark, location, changed)
    if nested:  # the structs as they are now
        existing = {f.name: f
                    for f in spark.read.format("delta").load(location).schema}
    return existing


__all__ = ["nested_additions"]
