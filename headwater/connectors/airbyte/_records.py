"""RECORD lines of one stream decoded in bulk into an Arrow record batch.

Decoding each RECORD line with ``json.loads`` and typing the dicts value by
value cost Headwater more CPU than the connector spent producing them.  Here a
block of lines is parsed at once by Arrow's JSON reader under an explicit
schema built from the stream's JSON schema, and the ``data`` struct's fields
become the batch; the engine then casts the columns as for any Arrow source.

The bulk result must equal the per-record path's, so the decoder refuses a
block (returns ``None``, and the caller decodes it line by line, notes and
errors exactly as before) whenever it could differ:

* a value of the wrong type, malformed JSON, a record without ``stream`` or
  ``data``: Arrow's reader is strict and fails the block;
* an inferred list (of a field or nested key outside the schema) whose first
  items are null: Arrow's reader makes an invalid array of it (pyarrow 26), so
  every block is validated;
* a column kept as JSON text (an object, a mixed or untyped property) or a field
  outside the schema, whose Arrow-inferred type cannot be written back as the
  same JSON text (a number that may have been an integer, a string Arrow took for
  a date-time, a null that may have been a missing key);
* a struct (an object with declared properties) or nested list in which Arrow
  took a string for a date-time (the per-record path infers its type from the
  dicts, where the string stays a string);
* a stream with a column type the reader cannot produce as the per-record path
  does (decimals, at any depth: Arrow reads a number as a double, the
  per-record path keeps its literal; base64 binary): such streams are never
  decoded in bulk.

Date-time and date columns are read as text and cast by the engine with Arrow
(the same cast every native Arrow source gets).

Struct columns (an object whose properties the schema declares) and lists of
them are read under their declared type, so nested objects stay data without
any per-record Python; a block is refused where that could differ from the
per-record path: a nested key outside the declared properties (Arrow would add
it, the per-record path drops it), or a nested value of another type (Arrow's
reader fails).  A struct with a leaf the reader cannot produce as the
per-record path does (a decimal, base64 binary inside it) keeps the whole
stream on the per-record path.
"""

from __future__ import annotations

import io
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pa_json

from headwater.connectors._json_values import (
    exact_json_values,
    inferred_alike,
    undeclared_alike,
)
from headwater.table_schema import READER_NOTES, arrow_schema_for, has_decimal, is_nested

__all__ = ["RecordDecoder"]

_DIRECT = (pa.int64(), pa.float64(), pa.bool_(), pa.string())


class RecordDecoder:
    """Decodes blocks of one stream's RECORD lines; built once per read of the stream."""

    def __init__(self, stream: str, json_schema: Mapping[str, Any],
                 schema: pa.Schema | None = None) -> None:
        """``schema``: the stream's table columns (by default from ``json_schema``)."""
        self.stream = stream
        props = json_schema.get("properties") or {}
        read_fields: list[pa.Field] = []
        self.json_text: set[str] = set()
        self.nested: set[str] = set()
        self.usable = True
        for field in arrow_schema_for(json_schema) if schema is None else schema:
            kind = field.type
            if kind == pa.string() and not _plain_string(props.get(field.name) or {}):
                self.json_text.add(field.name)  # left to inference, written back as text
            elif pa.types.is_timestamp(kind) or pa.types.is_date(kind):
                read_fields.append(pa.field(field.name, pa.string()))
            elif _readable(kind):
                read_fields.append(pa.field(field.name, kind))
            elif is_nested(kind) and not has_decimal(kind):
                # A struct with a date-time or binary leaf: inferred by Arrow,
                # kept where no date-time was inferred, cast as the dicts' would be.
                self.nested.add(field.name)
            else:
                self.usable = False
        #: Fields read under their declared type; every other one is inferred by Arrow.
        self.typed = {field.name: field.type for field in read_fields}
        self.read_schema = pa.schema([
            pa.field("type", pa.string()),
            pa.field("record", pa.struct([
                pa.field("stream", pa.string()),
                pa.field("emitted_at", pa.float64()),
                pa.field("data", pa.struct(read_fields)),
            ])),
        ])

    def decode(self, lines: Sequence[str]) -> pa.RecordBatch | None:
        """This stream's records of ``lines`` as one batch, or ``None`` to decode per line.

        ``lines`` start like a RECORD (``{"type":"RECORD"``, as a :class:`RecordBlock`'s
        do): pyarrow 26's JSON reader crashes the process (a segmentation fault) on a
        block whose first value is ``null``, so a block that does not start with an
        object is refused before it gets there.
        """
        if not self.usable or not lines or not lines[0].startswith("{"):
            return None
        text = "".join(lines).encode()
        try:
            table = pa_json.read_json(
                io.BytesIO(text),
                read_options=pa_json.ReadOptions(use_threads=False, block_size=len(text) + 1),
                parse_options=pa_json.ParseOptions(explicit_schema=self.read_schema,
                                                   unexpected_field_behavior="infer"))
            # pyarrow 26's reader builds an invalid list where it infers one whose first
            # items are null (``[null, 1]``): reading it crashes or gives other values.
            table.validate(full=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            return None
        if table.num_rows != len(lines):
            return None
        record = table.column("record").combine_chunks()
        if record.null_count:
            return None
        parts = dict(zip((f.name for f in record.type), record.flatten(), strict=True))
        stream, data = parts["stream"], parts["data"]
        if stream.null_count or data.null_count:
            return None
        ours = pc.equal(stream, pa.scalar(self.stream))
        if not pc.all(ours).as_py():
            data = data.filter(ours)
        names, columns = [], []
        for field, column in zip(data.type, data.flatten(), strict=True):
            if field.name in self.typed:
                if field.type != self.typed[field.name] and not undeclared_alike(
                        column, self.typed[field.name]):
                    # A nested key outside the declared properties typed otherwise
                    # than the dicts are: text Arrow took for a date-time, an integer
                    # past int64 it read as a double.
                    return None
                # Other undeclared nested keys come along; the engine's cast of the
                # struct notes them, as it does the dicts' (same table, same notes).
                names.append(field.name)
                columns.append(column)
                continue
            if field.name == READER_NOTES:
                return None
            if field.name in self.json_text:
                converted = _as_json_text(column)
            elif field.name in self.nested:
                converted = (column if inferred_alike(column) or exact_json_values(column)
                             else None)
            else:  # a field outside the schema: its nulls are noted by neither path
                converted = (column if exact_json_values(column.filter(column.is_valid()))
                             else None)
            if converted is None:
                return None
            names.append(field.name)
            columns.append(converted)
        if not names:  # a batch without columns would lose its row count
            return None
        return pa.RecordBatch.from_arrays(columns, names=names)


def _readable(kind: pa.DataType) -> bool:
    """A type Arrow's JSON reader gives exactly as the per-record path does.

    Integers, doubles, booleans, strings, and lists and structs of them at any depth.
    """
    if kind in _DIRECT:
        return True
    if pa.types.is_list(kind):
        return _readable(kind.value_type)
    if pa.types.is_struct(kind):
        return all(_readable(field.type) for field in kind)
    return False


def _plain_string(prop: Mapping[str, Any]) -> bool:
    """A property typed only as a JSON string (a column of text, not of JSON text)."""
    declared = prop.get("type")
    types = [declared] if isinstance(declared, str) else list(declared or [])
    return [t for t in types if t != "null"] == ["string"]


def _as_json_text(column: pa.Array) -> pa.Array | None:
    """A JSON-text column as the per-record path writes it (``json.dumps``, sorted keys)."""
    kind = column.type
    if pa.types.is_null(kind):
        return pa.nulls(len(column), pa.string())
    # A column Arrow inferred as strings held JSON strings: their JSON text is quoted
    # (``"x"``), as the per-record path writes a string value of an open column.
    if not exact_json_values(column.filter(column.is_valid())):
        return None
    encoded = _encode(column)
    if encoded is not None:
        return encoded
    return pa.array([None if value is None else json.dumps(value, sort_keys=True)
                     for value in column.to_pylist()], pa.string())


#: Characters ``json.dumps`` (``ensure_ascii``) escapes: not printable ASCII, ``"`` or ``\``.
_ESCAPED = r'[^\x20-\x7e]|["\\]'


def _encode(column: pa.Array) -> pa.Array | None:
    """``json.dumps(value, sort_keys=True)`` of each value with Arrow kernels (nulls stay null).

    ``None`` for what it does not cover (arrays); the caller then encodes value by value.
    """
    kind = column.type
    if kind in (pa.int64(), pa.bool_()):
        return pc.cast(column, pa.string())  # 5 -> "5", true -> "true"
    if kind == pa.string():
        quoted = pc.binary_join_element_wise('"', column, '"', "")
        escaped = pc.fill_null(pc.match_substring_regex(column, _ESCAPED), False)
        if not pc.any(escaped).as_py():
            return quoted
        return pc.replace_with_mask(quoted, escaped, pa.array(
            [json.dumps(v) for v in column.filter(escaped).to_pylist()], pa.string()))
    if pa.types.is_struct(kind):
        children = dict(zip((f.name for f in kind), column.flatten(), strict=True))
        parts: list[pa.Array | str] = ["{"]
        for number, name in enumerate(sorted(children)):
            value = _encode(children[name])
            if value is None:
                return None
            parts += [(", " if number else "") + json.dumps(name) + ": ", value]
        if len(parts) == 1:  # no fields: "{}" where the struct is valid
            return pc.if_else(column.is_valid(), "{}", pa.scalar(None, pa.string()))
        parts.append("}")
        return pc.binary_join_element_wise(*parts, "")
    return None
