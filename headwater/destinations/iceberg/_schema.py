"""A stream's Arrow schema as an Iceberg table's, and back.

Why: the tasks write Parquet files from the schema ``prepare`` returns, and the
driver adds those files to the table by column name (the table's name mapping,
``schema.name-mapping.default``: files written outside Iceberg carry no field
ids).  So the schema handed back must type each column the table already has
as the table types it, and the table must have every column the files carry.

Rules, as the Delta destination's where Iceberg allows:

* the table is ``_hw_*`` metadata columns, then the stream's typed columns,
  every column optional (Delta's are all nullable too);
* open values (VARIANT in Delta) land as JSON text: Iceberg v2 has no variant
  type and PyIceberg 0.12 writes no v3 variant;
* new top-level source columns are added (``union_by_name``); a column whose type
  changed keeps the table's type, and values that do not fit it become notes;
  fields a struct gained are not added yet (its values keep them as notes);
* a table Headwater did not create (it lacks the ``_hw_*`` columns) is taken
  only where each shared column's type holds every value of the stream's
  (``_existing_table.py``), checked before the table changes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pyarrow as pa

from headwater.destinations._existing_table import is_headwater_table, misfits, refuse
from headwater.table_schema import JSON_TEXT, LOGICAL_KEY, META_FIELDS, json_kind

if TYPE_CHECKING:
    from pyiceberg.schema import Schema
    from pyiceberg.table import Table


def _as_text(field: pa.Field) -> pa.Field:
    """``field``, an open value's column marked as plain JSON text (no VARIANT here)."""
    if json_kind(field) is None:
        return field
    return pa.field(field.name, pa.string(), metadata={LOGICAL_KEY: JSON_TEXT})


def table_schema(data_schema: pa.Schema) -> pa.Schema:
    """The Arrow schema a new table is created from: metadata columns, then data, all optional."""
    return pa.schema([field.with_nullable(True)
                      for field in META_FIELDS + [_as_text(f) for f in data_schema]])


def new_columns(existing: set[str], data_schema: pa.Schema) -> pa.Schema:
    """The columns of a table made from ``data_schema`` that ``existing`` lacks, in order."""
    return pa.schema([f for f in table_schema(data_schema) if f.name not in existing])


def small_types(kind: pa.DataType) -> pa.DataType:
    """``kind`` with PyIceberg's large strings, binaries and lists made plain, recursively.

    The tasks' batches use plain types (what the engine builds and Spark's
    ``mapInArrow`` hands over); Iceberg does not tell the two apart.
    """
    if pa.types.is_large_string(kind):
        return pa.string()
    if pa.types.is_large_binary(kind):
        return pa.binary()
    if pa.types.is_large_list(kind) or pa.types.is_list(kind):
        return pa.list_(small_types(kind.value_type))
    if pa.types.is_struct(kind):
        return pa.struct([pa.field(f.name, small_types(f.type)) for f in kind])
    if pa.types.is_map(kind):
        return pa.map_(small_types(kind.key_type), small_types(kind.item_type))
    return kind


def writing_schema(data_schema: pa.Schema, table: Schema) -> pa.Schema:
    """``data_schema`` with each column the table has typed as the table types it.

    JSON text stays JSON text (the table's column is a string either way).
    """
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    typed = {f.name: small_types(f.type)
             for f in schema_to_pyarrow(table, include_field_ids=False)}
    fields = []
    for field in data_schema:
        field = _as_text(field)
        have = typed.get(field.name)
        if have is None or small_types(field.type).equals(have):
            fields.append(field)
        else:
            fields.append(pa.field(field.name, have))
    return pa.schema(fields)


def columns_of(table: Table) -> pa.Schema:
    """``table``'s columns in the tasks' Arrow types (plain strings, lists)."""
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    arrow = schema_to_pyarrow(table.schema(), include_field_ids=False)
    return pa.schema([pa.field(f.name, small_types(f.type), nullable=f.nullable)
                      for f in arrow])


def refuse_misfits(table: Table, data_schema: pa.Schema, identifier: str, stream: str) -> None:
    """Raise a ConfigError when ``table`` cannot take the stream's rows as they are.

    Never for a table Headwater created (it has the ``_hw_*`` columns): its schema
    evolves as above.  Iceberg adds no field to a struct here, so a struct field
    the table lacks is a misfit too.
    """
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    arrow = schema_to_pyarrow(table.schema(), include_field_ids=False)
    if is_headwater_table(arrow.names):
        return
    refuse(misfits(arrow, table_schema(data_schema), adds_nested_fields=False),
           table=f"Iceberg table {identifier}", stream=stream)


__all__ = ["columns_of", "new_columns", "refuse_misfits", "small_types", "table_schema",
           "writing_schema"]
