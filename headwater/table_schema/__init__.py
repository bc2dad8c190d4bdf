"""Table schema of a stream: typed Arrow columns from its JSON Schema, plus metadata columns.

Runs on executors, on every batch a stream yields, so the common case (the
reader already produced the right Arrow type) costs nothing, a column of the
wrong type is cast with Arrow's vectorised kernels, and only a column whose cast
fails falls back to value-by-value conversion.  A value that does not fit its
column becomes null and leaves a note ``{field, reason, value}`` in the row's
``_hw_notes``: never dropped silently, never fatal to the sync.

The package splits that work by concern, and re-exports every public name here
(``from headwater.table_schema import X`` is how the rest of Headwater imports it):

* ``_meta.py``: the metadata columns every table has, and the rows' notes;
* ``_types.py``: Arrow types from a stream's JSON Schema (and JSON-text columns' marks);
* ``_values.py``: value-by-value coercion into a column's type, the slow path;
* ``_columns.py``: a reader's column into its declared type, vectorised;
* ``_json_text.py``: columns of JSON text (open values);
* ``_batches.py``: a reader's batch conformed to the schema, dict records typed in bulk.
"""

from __future__ import annotations

from headwater.table_schema._batches import (
    EXACT_INTS,
    batch_from_plain_records,
    batch_from_records,
    conform_batch,
)
from headwater.table_schema._columns import (
    coerce_column,
)
from headwater.table_schema._json_text import (
    JsonText,
    json_text_column,
    json_text_values,
    to_json_text,
)
from headwater.table_schema._meta import (
    LOCAL_TIMESTAMP,
    MAX_NOTE_VALUE,
    META_FIELDS,
    META_NAMES,
    NOTE_TYPE,
    NOTES_TYPE,
    READER_NOTES,
    UTC_TIMESTAMP,
    Note,
    NoteRows,
    RowNotes,
    note_text,
    unwritten_columns,
)
from headwater.table_schema._types import (
    JSON_TEXT,
    LOGICAL_KEY,
    VARIANT,
    arrow_field_for,
    arrow_schema_for,
    arrow_type_for,
    column_type_label,
    has_binary,
    has_decimal,
    is_nested,
    is_open,
    json_columns_problem,
    json_kind,
    json_kinds_differ,
    map_leaf_types,
    struct_type_for,
    variant_columns,
)
from headwater.table_schema._values import (
    coerce_values,
    python_values,
)

__all__ = ["EXACT_INTS", "JSON_TEXT", "LOCAL_TIMESTAMP", "LOGICAL_KEY", "MAX_NOTE_VALUE",
           "META_FIELDS", "META_NAMES", "NOTES_TYPE", "NOTE_TYPE", "READER_NOTES", "UTC_TIMESTAMP",
           "VARIANT", "JsonText", "Note", "NoteRows", "RowNotes", "arrow_field_for",
           "arrow_schema_for", "arrow_type_for", "batch_from_plain_records", "batch_from_records",
           "coerce_column", "coerce_values", "column_type_label", "conform_batch", "has_binary",
           "has_decimal",
           "is_nested", "is_open", "json_columns_problem", "json_kind", "json_kinds_differ",
           "json_text_column", "json_text_values", "map_leaf_types", "note_text", "python_values",
           "struct_type_for", "to_json_text", "unwritten_columns", "variant_columns"]
