"""VARIANT columns: JSON text from the tasks, Delta VARIANT in the table.

An open value (an object without properties, a value of mixed or no type;
:func:`headwater.table_schema.is_open`) reaches the destination as a string
column of JSON text whose Arrow field is marked
:data:`~headwater.table_schema.VARIANT`.  PySpark 4.2's Arrow conversion does
know VARIANT, but only as Spark's binary encoding (a ``struct<value, metadata>``
of bytes): building that in Python means PySpark's pure-Python
``VariantBuilder`` per value, and a second encoder to keep equal to Spark's.
So the text travels as text and Spark's own ``try_parse_json`` turns it into
VARIANT in the very job that writes the checkpoint: one parser, Spark's, for
every writer path (append, MERGE, staged overwrite, replay).

Only Spark's Delta writer writes such tables: the task path (pyarrow files
committed through delta-rs) has no VARIANT encoder, so a new table with
VARIANT columns is created by Spark, and an existing one lists the
``variantType`` table feature, which is off the task path's allowlist
(``_table_features.py``).

A text that is not valid JSON (or too large for a VARIANT) becomes null plus a
note in ``_hw_notes``, like any value that does not fit its column: the sync
goes on.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from headwater.destinations.delta._sql import quote
from headwater.table_schema import MAX_NOTE_VALUE, VARIANT, json_kind, variant_columns

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import StructType

__all__ = ["spark_schema", "task_path_reason", "variant_columns", "with_variants"]

#: ``_hw_notes``' Spark type, for an empty list of notes to append to.
_NOTES_SQL = "array<struct<field:string,reason:string,value:string>>"
#: The note a text that is not a VARIANT leaves.
NOT_JSON = "not valid JSON for a VARIANT (or larger than a VARIANT may be)"


def spark_schema(schema: pa.Schema) -> StructType:
    """``schema`` as Spark's, with the columns marked VARIANT typed ``VariantType``."""
    from pyspark.sql.pandas.types import from_arrow_schema
    from pyspark.sql.types import StructField, StructType, VariantType

    converted = from_arrow_schema(schema)
    return StructType([
        StructField(f.name, VariantType(), f.nullable)
        if json_kind(schema.field(f.name)) == VARIANT else f
        for f in converted])


def task_path_reason(columns: Sequence[str]) -> str:
    """The ``writer_reason`` of a table Spark writes because of its VARIANT columns."""
    return (f"VARIANT columns ({', '.join(columns)}): Spark's writer turns their JSON text "
            "into VARIANT (try_parse_json); the task path does not write VARIANT")


def with_variants(rows: DataFrame, columns: Sequence[str]) -> DataFrame:
    """``rows`` with ``columns`` (JSON text) parsed into VARIANT by Spark.

    A non-null text Spark cannot parse becomes null and adds a note to the
    row's ``_hw_notes`` (so the row counts as rejected), with the text's first
    :data:`~headwater.table_schema.MAX_NOTE_VALUE` characters.
    """
    from pyspark.sql import functions as F

    if not columns:
        return rows
    notes: Column = F.col("_hw_notes")
    for name in columns:
        text = F.col(quote(name))
        bad = text.isNotNull() & F.try_parse_json(text).isNull()
        clipped = F.when(F.length(text) > MAX_NOTE_VALUE,
                         F.concat(F.substring(text, 1, MAX_NOTE_VALUE), F.lit("…"))
                         ).otherwise(text)
        note = F.struct(F.lit(name).alias("field"), F.lit(NOT_JSON).alias("reason"),
                        clipped.alias("value"))
        notes = F.when(bad, F.concat(F.coalesce(notes, F.array().cast(_NOTES_SQL)),
                                     F.array(note))).otherwise(notes)
    wanted = set(columns)
    return rows.select(*[
        notes.alias(name) if name == "_hw_notes"
        else F.try_parse_json(F.col(quote(name))).alias(name) if name in wanted
        else F.col(quote(name))
        for name in rows.columns])
