"""A stream's JSON Schema from a sample of its first objects, overridable by column.

Types come from pyarrow's own inference on a sample (CSV, JSONL), the Parquet
footer, or Avro records; the config's ``schema`` replaces any column's type.
Every column is nullable: an object that lacks a column is not an error.

Structs become objects with their properties and lists of structs arrays of
them, at any depth, so nested data lands as structs and arrays.  Text columns of
a CSV or JSONL sample (nested ones too) whose every value is an ISO 8601
date-time or date become ``format: date-time`` / ``date``: pyarrow's inference
keeps date-times with fractional seconds in JSON as text and takes dates for
timestamps, so its guesses are replaced by this one, made with Arrow kernels on
the sampled column.

A sample never loses columns silently.  A CSV sample is typed without the lines
its encoding cannot decode (the reader rejects those rows one by one, so one bad
byte must not cost the sample its header); an object whose sample still fails
is skipped for the next one; and when every sampled object failed, planning
fails with :class:`SampleError` naming them, rather than planning a stream of
only the ``schema`` overrides (whose every row would land with its undeclared
columns in notes).  A failure of the store itself (:class:`StorageReadError`)
is raised as it is: it says nothing about the objects.
"""

from __future__ import annotations

import io
import itertools
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any

import fsspec
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from headwater.connectors.object_storage._config import CsvFormat, StreamConfig
from headwater.connectors.object_storage._formats import (
    CSV_NULLS,
    KEY_COLUMN,
    RECORD_COLUMN,
    has_null_line,
)
from headwater.connectors.object_storage._io import (
    StorageFile,
    StorageReadError,
    compression_of,
    decompress,
)
from headwater.connectors.object_storage._listing import ObjectInfo
from headwater.errors import ConnectorError
from headwater.table_schema import UTC_TIMESTAMP, map_leaf_types

__all__ = ["SampleError", "infer_json_schema", "json_schema_of", "jsonl_sample_schema",
           "refine_type", "sample_schema"]

log = logging.getLogger(__name__)

#: Objects looked at, at most, to fill the sample.
SAMPLE_OBJECTS = 10
#: Bytes of a CSV/JSONL object read, at most, for the sample.
SAMPLE_BYTES = 4 * 1024 * 1024

#: ISO 8601 as Arrow's cast and JSON reader parse it: a date, ``T`` or a space, hours and
#: minutes, optional seconds with up to microseconds, optional ``Z`` or offset.
_DATE = r"\d{4}-\d{2}-\d{2}"
_DATE_TIME = _DATE + r"[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?"
_ZONE = r"(Z|[+-]\d{2}(:?\d{2})?)"


class SampleError(ConnectorError):
    """No sampled object of a stream could be read: its columns cannot be known."""


def json_schema_of(arrow_type: pa.DataType) -> dict[str, Any]:
    """The nullable JSON Schema property a column of ``arrow_type`` declares."""
    t = arrow_type
    if pa.types.is_boolean(t):
        kind: dict[str, Any] = {"type": "boolean"}
    elif pa.types.is_integer(t):
        kind = {"type": "integer"}
    elif pa.types.is_decimal(t) and 1 <= t.precision <= 38 and 0 <= t.scale <= t.precision:
        # The same decimal in the table: as a double, digits past its 53 bits were lost.
        kind = {"type": "number", "format": "decimal", "precision": t.precision,
                "scale": t.scale}
    elif pa.types.is_decimal(t):  # wider than a Delta decimal: its text loses nothing
        kind = {"type": "string"}
    elif pa.types.is_floating(t):
        kind = {"type": "number"}
    elif pa.types.is_binary(t) or pa.types.is_large_binary(t) \
            or pa.types.is_fixed_size_binary(t):
        # Bytes land as bytes (a binary column), not as the text of a Python bytes repr.
        kind = {"type": "string", "contentEncoding": "base64"}
    elif pa.types.is_timestamp(t):
        # pyarrow's CSV/JSON inference yields naive timestamps already normalised to
        # UTC, so every timestamp lands as UTC (a naive one is taken to be UTC).
        kind = {"type": "string", "format": "date-time"}
    elif pa.types.is_date(t):
        kind = {"type": "string", "format": "date"}
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        return {"type": ["null", "array"], "items": json_schema_of(t.value_type)}
    elif pa.types.is_struct(t) and t.num_fields:
        return {"type": ["null", "object"],
                "properties": {field.name: json_schema_of(field.type) for field in t}}
    elif pa.types.is_struct(t) or pa.types.is_map(t):
        return {"type": ["null", "object"]}
    else:  # strings, binary, null (no value seen yet): text loses nothing
        kind = {"type": "string"}
    return {**kind, "type": ["null", kind["type"]]}


def _all(column: pa.Array, pattern: str) -> bool:
    return bool(pc.all(pc.match_substring_regex(column, "^" + pattern + "$")).as_py())


def _parses(column: pa.Array, target: pa.DataType) -> bool:
    try:
        pc.cast(column, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return False
    return True


def _text_type(column: pa.Array) -> pa.DataType:
    """``date32`` or a UTC timestamp when every value of a text column is one, else string."""
    values = column.drop_null()
    if len(values) == 0:
        return column.type
    if _all(values, _DATE) and _parses(values, pa.date32()):
        return pa.date32()
    if not _all(values, _DATE_TIME + _ZONE + "?"):
        return column.type
    zoned = pc.match_substring_regex(values, _ZONE + "$")
    # Arrow casts text with an offset to an aware timestamp, without one to a naive one
    # (which lands as UTC, as the JSON reader and the per-value path read it).
    if _parses(values.filter(zoned), UTC_TIMESTAMP) \
            and _parses(values.filter(pc.invert(zoned)), pa.timestamp("us")):
        return UTC_TIMESTAMP
    return column.type


def refine_type(column: pa.Array | pa.ChunkedArray) -> pa.DataType:
    """The sampled column's type, its text of only date-times or dates typed so (at any depth)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    kind = column.type
    if pa.types.is_string(kind) or pa.types.is_large_string(kind):
        return _text_type(column)
    if pa.types.is_struct(kind):
        return pa.struct([pa.field(field.name, refine_type(child))
                          for field, child in zip(kind, column.flatten(), strict=True)])
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return pa.list_(refine_type(column.flatten()))
    return kind


def _refined(table: pa.Table) -> pa.Schema:
    return pa.schema([pa.field(field.name, refine_type(column))
                      for field, column in zip(table.schema, table.columns, strict=True)])


def _dates_as_text(kind: pa.DataType) -> pa.DataType:
    """``kind`` with every timestamp and date in it read as text instead."""
    return map_leaf_types(kind, lambda leaf: pa.string()
                          if pa.types.is_timestamp(leaf) or pa.types.is_date(leaf) else leaf)


def _sample_lines(stream: Any, records: int) -> bytes:
    data = stream.read(SAMPLE_BYTES)
    cut = len(data)
    if len(data) == SAMPLE_BYTES:
        cut = data.rfind(b"\n") + 1
    lines = data[:cut].split(b"\n")
    return b"\n".join(lines[: records + 1])


def _sample_csv(stream: Any, fmt: CsvFormat, records: int) -> pa.Table:
    """The sample typed by pyarrow's inference, except a column of integers some of
    which are past int64 (inferred as doubles, which round them): ``decimal(38, 0)``
    when every one fits 38 digits, else text, so no sampled value lands rounded."""
    data = _decodable_lines(_sample_lines(stream, records + fmt.skip_rows + int(fmt.header)),
                            fmt.encoding)

    def read(types: dict[str, pa.DataType] | None = None) -> pa.Table:
        return pa_csv.read_csv(
            io.BytesIO(data),
            read_options=pa_csv.ReadOptions(
                encoding=fmt.encoding, skip_rows=fmt.skip_rows,
                column_names=fmt.column_names if not fmt.header else None,
                autogenerate_column_names=not fmt.header and not fmt.column_names),
            parse_options=pa_csv.ParseOptions(delimiter=fmt.delimiter,
                                              quote_char=fmt.quote_char or False,
                                              newlines_in_values=fmt.newlines_in_values,
                                              invalid_row_handler=lambda row: "skip"),
            convert_options=pa_csv.ConvertOptions(
                null_values=CSV_NULLS, strings_can_be_null=True,
                quoted_strings_can_be_null=False, column_types=types))

    table = read()
    floats = [i for i, f in enumerate(table.schema) if pa.types.is_floating(f.type)]
    if not floats:
        return table
    text = read({name: pa.string() for name in table.column_names})
    for i in floats:
        column = text.column(i).combine_chunks()
        kind = _big_integers_type(column)
        if kind is not None:
            table = table.set_column(i, table.schema.field(i).with_type(kind),
                                     column if kind == pa.string() else column.cast(kind))
    return table


def _decodable_lines(data: bytes, encoding: str) -> bytes:
    """``data`` without the lines ``encoding`` cannot decode.

    pyarrow types a column with such a value as binary, or refuses the sample when
    it reads the column as text, so one bad byte would cost the sample the whole
    column or every column; the reader rejects those rows one by one.  Only for an
    encoding in which a line break is the byte ``\\n`` (not UTF-16, say).
    """
    try:
        if _decodes(data, encoding) or "\n".encode(encoding) != b"\n":
            return data
    except LookupError:  # a codec Python does not know: pyarrow's error stands
        return data
    return b"\n".join(line for line in data.split(b"\n") if _decodes(line, encoding))


def _decodes(data: bytes, encoding: str) -> bool:
    try:
        data.decode(encoding)
    except UnicodeDecodeError:
        return False
    return True


def _big_integers_type(column: pa.Array) -> pa.DataType | None:
    """``decimal(38, 0)`` or text for a column of integer text past int64, else None."""
    values = column.drop_null()
    if len(values) == 0 or not _all(values, r"\s*[+-]?\d+\s*"):
        return None
    if _parses(values, pa.int64()):
        return None
    # Arrow's cast of more than 38 digits wraps around: the digits are counted.
    return pa.decimal128(38, 0) if _all(values, r"\s*[+-]?\d{1,38}\s*") else pa.string()


def _sample_jsonl(stream: Any, records: int) -> pa.Table:
    import pyarrow.json as pa_json

    sample = _sample_lines(stream, records)
    try:  # pyarrow's inference refuses a sample with a bad line
        if has_null_line(sample):  # pyarrow would crash: see has_null_line
            raise ValueError("a line of JSON null")
        inferred = pa_json.read_json(io.BytesIO(sample)).schema
        # Read again with what it took for timestamps as text: refine_type tells
        # dates from date-times, and knows fractional seconds it leaves as text.
        text = pa.schema([pa.field(f.name, _dates_as_text(f.type)) for f in inferred])
        return pa_json.read_json(io.BytesIO(sample), parse_options=pa_json.ParseOptions(
            explicit_schema=text))
    except (pa.ArrowInvalid, ValueError):
        pass
    rows = []
    for line in sample.split(b"\n"):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            rows.append(value)
    try:
        return pa.Table.from_pylist(rows)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):  # Overflow: an int past int64
        return _fitting_rows(rows)


def jsonl_sample_schema(lines: bytes, records: int) -> pa.Schema:
    """The schema of JSON Lines text typed as an object's sample is (dates refined): for
    a source whose records arrive one JSON value at a time (Kafka's)."""
    return _refined(_sample_jsonl(io.BytesIO(lines), records))


def _fitting_rows(rows: list[dict[str, Any]]) -> pa.Table:
    """The rows whose types agree with the rows before them, one by one: a value of
    another type (the reader notes it) must not cost the sample every column."""
    schema = pa.schema([])
    kept = []
    for row in rows:
        try:
            schema = pa.unify_schemas([schema, pa.Table.from_pylist([row]).schema],
                                      promote_options="permissive")
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
            continue
        kept.append(row)
    try:
        return pa.Table.from_pylist(kept, schema=schema)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return schema.empty_table()


def _sample_object(fs: fsspec.AbstractFileSystem, obj: ObjectInfo, config: StreamConfig,
                   records: int) -> pa.Schema:
    fmt = config.format
    with StorageFile(fs, obj.path) as raw:
        stream = decompress(raw, compression_of(obj.key, config.compression))
        if fmt.type == "csv":
            return _refined(_sample_csv(stream, fmt, records))
        if fmt.type == "jsonl":
            return _refined(_sample_jsonl(stream, records))
        if fmt.type == "parquet":
            import pyarrow.parquet as pq

            if compression_of(obj.key, config.compression):
                stream = io.BytesIO(stream.read())
            return pq.ParquetFile(stream).schema_arrow
        import fastavro

        rows = [dict(r) for r in itertools.islice(fastavro.reader(stream), records)
                if isinstance(r, Mapping)]
        return pa.Table.from_pylist(rows).schema


def sample_schema(fs: fsspec.AbstractFileSystem, objects: Sequence[ObjectInfo],
                  config: StreamConfig) -> pa.Schema:
    """The unified Arrow schema of the first readable objects (empty when there are none).

    Raises:
        SampleError: every non-empty object sampled failed (each named, with why).
        StorageReadError: the store failed while an object was sampled.
    """
    schemas = []
    failures: list[str] = []
    for obj in objects[:SAMPLE_OBJECTS]:
        if obj.size == 0:
            continue
        try:
            schemas.append(_sample_object(fs, obj, config, config.infer_records))
        except StorageReadError:
            raise  # the store failed, not the object
        except Exception as exc:  # the object's bytes: the next object may do
            log.warning("stream %s: object %s could not be sampled: %s: %s", config.name,
                        obj.key, type(exc).__name__, exc)
            failures.append(f"{obj.key}: {type(exc).__name__}: {exc}")
            continue
        if len(schemas) >= 3:
            break
    if failures and not schemas:
        raise SampleError(
            f"the schema of stream {config.name} cannot be sampled: no sampled object could "
            f"be read ({'; '.join(failures)}); fix or move the object, or list a readable "
            "one first", stream=config.name)
    if not schemas:
        return pa.schema([])
    try:
        return pa.unify_schemas(schemas, promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        names: dict[str, pa.DataType] = {}
        for schema in schemas:
            for field in schema:
                seen = names.setdefault(field.name, field.type)
                if seen != field.type:
                    names[field.name] = pa.string()
        return pa.schema(list(names.items()))


def infer_json_schema(arrow: pa.Schema, overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """The stream's JSON Schema: sampled columns, the config's overrides, the source columns."""
    properties: dict[str, Any] = {f.name: json_schema_of(f.type) for f in arrow}
    for name, prop in (overrides or {}).items():
        properties[name] = dict(prop)
    properties[KEY_COLUMN] = {"type": "string"}
    properties[RECORD_COLUMN] = {"type": "integer"}
    return {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
            "properties": properties}
