"""Transformers: the bytes of one object (or split) into records with record numbers.

Every batch a reader yields carries two source columns: ``_source_key`` (the
object's key) and ``_source_record`` (the record's number in the object,
counted from 0; CSV and JSONL count data lines, skipping blank ones, Parquet and
Avro count rows).  A record that cannot be read is not dropped: it becomes a row
with null data columns and a note in ``_hw_notes`` (see
:data:`headwater.table_schema.READER_NOTES`) saying why, so the engine counts it
as rejected and the table keeps key, record number and reason.

Readers take a schema of the data columns (without the source columns) and may
yield looser types: the engine casts, and records every value that does not fit.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO

import msgspec
import numpy as np
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json

from headwater import json_numbers
from headwater.connectors._json_values import exact_json_values, undeclared_alike
from headwater.connectors.object_storage._config import CsvFormat
from headwater.connectors.object_storage._io import line_blocks, newlines_before
from headwater.sdk import RecordOrBatch
from headwater.table_schema import (
    MAX_NOTE_VALUE,
    NOTES_TYPE,
    READER_NOTES,
    JsonText,
    has_decimal,
    json_kind,
    map_leaf_types,
    note_text,
)

__all__ = ["CSV_NULLS", "KEY_COLUMN", "RECORD_COLUMN", "ReadPosition", "Rejects", "read_avro",
           "read_csv", "read_jsonl", "read_parquet", "reject_batch"]

KEY_COLUMN = "_source_key"
RECORD_COLUMN = "_source_record"
#: The CSV text that is null: an empty unquoted field only (``""`` is an empty string).
#: pyarrow's default also takes ``NA``, ``N/A``, ``null``, ``NaN``, ``None``... for null,
#: which lost those values of text columns (Spark's and Python's readers keep them).
CSV_NULLS = [""]
#: Rows per batch of the Avro reader (dicts) and the Parquet reader.
BATCH_ROWS = 65_536


def _note(reason: str, value: Any = None, field: str = "") -> dict[str, str]:
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="backslashreplace")
    text = "" if value is None else str(value)
    if len(text) > MAX_NOTE_VALUE:
        text = text[:MAX_NOTE_VALUE] + "…"
    return {"field": field, "reason": reason, "value": text}


def reject_batch(key: str, rejects: Sequence[tuple[int, str, Any]]) -> pa.RecordBatch:
    """Rows for records that could not be read: ``(record number, reason, raw value)``."""
    return pa.RecordBatch.from_arrays(
        [pa.array([key] * len(rejects), pa.string()),
         pa.array([r[0] for r in rejects], pa.int64()),
         pa.array([[_note(r[1], r[2])] for r in rejects], NOTES_TYPE)],
        names=[KEY_COLUMN, RECORD_COLUMN, READER_NOTES])


def _with_source(batch: pa.RecordBatch, key: str,
                 numbers: np.ndarray[Any, Any]) -> pa.RecordBatch:
    keys = pa.DictionaryArray.from_arrays(pa.array(np.zeros(batch.num_rows, np.int32)),
                                          pa.array([key])).cast(pa.string())
    return batch.append_column(KEY_COLUMN, keys).append_column(
        RECORD_COLUMN, pa.array(numbers, pa.int64()))


@dataclass
class ReadPosition:
    """Where a reader is in its object: the next record number (shared with the caller,
    so a reader that fails half way tells after how many records it stopped)."""

    next_record: int = 0


Rejects = list[tuple[int, str, Any]]


# ----------------------------------------------------------------------------- JSONL


#: A line may be blank or start with blanks (JSON's whitespace) where the block has one
#: of these (or starts with a blank): only then are its lines looked at one by one.
_BLANK_STARTS = (b"\n\n", b"\n ", b"\n\t", b"\n\r")
#: A line that is JSON ``null`` (after blanks).
_NULL_LINE = re.compile(rb"(?:^|\n)[ \t\r]*null")


def _objects_only(block: bytes, lines: int) -> bool:
    """Every line starts with ``{`` (the common case: one count over the bytes);
    ``lines``: the block's count of ``\\n``."""
    return block[:1] == b"{" and block.count(b"\n{") == lines - block.endswith(b"\n")


def _may_have_blank_lines(block: bytes) -> bool:
    return block[:1] in (b"\n", b" ", b"\t", b"\r") or any(
        start in block for start in _BLANK_STARTS)


def has_null_line(block: bytes) -> bool:
    """Whether a line of ``block`` starts with JSON ``null``.

    pyarrow 26's JSON reader crashes the process (a segmentation fault) on a
    block whose first value is ``null``, and reads a later one as a row of nulls
    (the line-by-line path rejects it: not an object), so such a block must never
    reach it.  Two searches of the bytes, and the pattern where lines start with
    blanks.
    """
    if block.startswith(b"null") or b"\nnull" in block:
        return True
    return _may_have_blank_lines(block) and _NULL_LINE.search(block) is not None


def _jsonl_numbers(block: bytes, first: int, rows: int, lines: int,
                   objects_only: bool) -> np.ndarray[Any, Any] | None:
    """The record numbers of pyarrow's rows: one per non-blank line, counted from
    ``first``; None when the rows are not one per non-blank line (pyarrow reads
    ``{} {}`` on one line as two rows, the line-by-line path rejects the line)."""
    if objects_only or not _may_have_blank_lines(block):  # the common, vectorised case
        return np.arange(first, first + rows, dtype=np.int64) if rows == lines else None
    kept = [i for i, line in enumerate(block.split(b"\n")[:lines]) if line.strip()]
    if len(kept) != rows:
        return None
    return np.asarray(kept, dtype=np.int64) + first


def _jsonl_slow(block: bytes, first: int, key: str,
                json_text: Sequence[str] = ()) -> Iterator[RecordOrBatch]:
    """Line by line, for a block pyarrow refused: bad lines become rejects.

    The ``json_text`` columns keep the line's own text of their value
    (:func:`_raw_values`), not a re-serialized dict.  Numbers keep their literal's
    text (:class:`~headwater.json_numbers.JsonFloat`): a decimal or an integer
    column is typed from it, not from a float.
    """
    rejects: Rejects = []
    for offset, line in enumerate(block.split(b"\n")[:-1]):
        if not line.strip():
            continue
        number = first + offset
        try:
            record = json_numbers.loads(line)
        except UnicodeDecodeError as exc:
            rejects.append((number, f"not valid UTF-8: {exc}", line))
            continue
        except ValueError as exc:
            rejects.append((number, f"malformed JSON: {exc}", line))
            continue
        if not isinstance(record, dict):
            rejects.append((number, f"a JSON {type(record).__name__}, not an object", line))
            continue
        if json_text:
            record.update(_raw_values(line, json_text))
        record[KEY_COLUMN] = key
        record[RECORD_COLUMN] = number
        yield record
    if rejects:
        yield reject_batch(key, rejects)


def _json_read_type(kind: pa.DataType) -> pa.DataType:
    """The type pyarrow's JSON reader is asked for, for a column of type ``kind``.

    Date-times and dates, inside structs and lists too, are read as text and cast
    by the engine with Arrow (text Python's ``fromisoformat`` refuses, as year 0,
    goes value by value to its note): the reader's own parser takes year 0 and
    other text the line-by-line path notes as misfits.  Bytes (a base64 string)
    are read as their text too, which the engine decodes: asked for binary, the
    reader lands the text's own bytes (``b"aGk="`` for ``hi``).
    """
    return map_leaf_types(kind, lambda leaf: pa.string()
                          if pa.types.is_date(leaf) or pa.types.is_timestamp(leaf)
                          or pa.types.is_binary(leaf) or pa.types.is_large_binary(leaf)
                          else leaf)


def read_jsonl(stream: BinaryIO, key: str, schema: pa.Schema, position: ReadPosition,
               start: int = 0, end: int | None = None) -> Iterator[RecordOrBatch]:
    """JSON Lines through pyarrow's reader block by block; a block it refuses (a broken
    line, a value of another type) is read again line by line.

    Nested objects and arrays are read under their struct and list types, so a
    well-formed block is typed by Arrow alone, with no Python per record."""
    if start > 0:
        position.next_record = newlines_before(stream, start - 1) + 1
    if any(json_kind(field) is not None or has_decimal(field.type) for field in schema):
        yield from read_jsonl_json_text(stream, key, schema, position, start, end)
        return
    read_schema = pa.schema([pa.field(f.name, _json_read_type(f.type)) for f in schema])
    options = pa_json.ParseOptions(explicit_schema=read_schema,
                                   unexpected_field_behavior="infer", newlines_in_values=False)
    for block in line_blocks(stream, start, end):
        lines = block.count(b"\n")
        first = position.next_record
        objects_only = _objects_only(block, lines)
        table = _bulk_block(block, read_schema, options, objects_only)
        numbers = None if table is None else _jsonl_numbers(block, first, table.num_rows,
                                                             lines, objects_only)
        if table is None or numbers is None:
            yield from _jsonl_slow(block, first, key)
        else:
            for batch in table.to_batches():
                yield _with_source(batch, key, numbers[: batch.num_rows])
                numbers = numbers[batch.num_rows :]
        position.next_record = first + lines


def _bulk_block(block: bytes, read_schema: pa.Schema, options: pa_json.ParseOptions,
                objects_only: bool) -> pa.Table | None:
    """The block as pyarrow reads it, or None where only the line-by-line path gives
    the same rows and notes:

    * a line pyarrow refuses (broken, not an object, a value of another type), or
      a line of JSON ``null`` (:func:`has_null_line`: pyarrow crashes on it);
    * an invalid array: pyarrow 26's reader makes one of a list it infers (a key
      outside the schema) whose first items are null (``[null, 1]``);
    * a key outside the schema whose notes could differ (:func:`_noted_alike`): a
      number Arrow read as a double may have been written as an integer;
    * a key inside an object outside its declared properties that Arrow types
      otherwise than the line-by-line path's inference of the dicts
      (:func:`~headwater.connectors._json_values.undeclared_alike`).

    Columns with a decimal leaf never come here (:func:`read_jsonl_json_text`).
    """
    if not objects_only and has_null_line(block):
        return None
    try:
        table = pa_json.read_json(
            io.BytesIO(block),
            read_options=pa_json.ReadOptions(use_threads=False, block_size=len(block) + 1),
            parse_options=options)
        table.validate(full=True)
    except (pa.ArrowInvalid, UnicodeDecodeError, ValueError):
        return None
    for name in table.column_names:
        column = table.column(name).combine_chunks()
        if name not in read_schema.names:
            if not _noted_alike(column):
                return None
        elif not undeclared_alike(column, read_schema.field(name).type):
            return None
    return table


def _noted_alike(column: pa.Array) -> bool:
    """Whether the engine notes an inferred column (a key outside the schema) as the
    line-by-line path notes its keys: values of types that give them back exactly
    (not a number that may have been an integer, nor text Arrow took for a
    date-time).  Its nulls, a JSON ``null`` or a line without the key, are noted
    by neither path."""
    return exact_json_values(column.filter(column.is_valid()))


# ------------------------------------------------------------ JSONL with JSON-text columns

#: Decodes a block's lines keeping every top-level value's own bytes (``msgspec.Raw``).
_RAW_LINES = msgspec.json.Decoder(dict[str, msgspec.Raw])


def read_jsonl_json_text(stream: BinaryIO, key: str, schema: pa.Schema, position: ReadPosition,
                         start: int = 0, end: int | None = None) -> Iterator[RecordOrBatch]:
    """JSON Lines whose schema has JSON-text columns (VARIANT or ``json_columns``).

    Their values keep the exact text the line has for them (key order, spacing,
    ``1.50``): msgspec hands each top-level value's bytes (``msgspec.Raw``)
    without decoding them, in bulk, while pyarrow's reader types the other
    columns.  Keys outside the schema come along as columns of their JSON text
    (the engine notes them).  A block either refuses (a malformed line, a line
    that is not an object, a value of the wrong type) is read line by line.
    """
    json_text = [field.name for field in schema if json_kind(field) is not None]
    # pyarrow's reader keeps a decimal past its precision and wraps one past 128 bits
    # (1e25 in a decimal(38, 18) gave 122083294381374201810.41...): a decimal column
    # is read as its values' text, which the engine types exactly; a decimal inside
    # an object or a list keeps the stream on the line-by-line path.
    exact = {field.name: field.type for field in schema
             if json_kind(field) is None and has_decimal(field.type)}
    # Dates (at any depth) are read as text and cast by the engine, as in read_jsonl.
    typed = pa.schema([pa.field(field.name, _json_read_type(field.type))
                       for field in schema if json_kind(field) is None
                       and field.name not in exact])
    # Keys outside the schema are inferred, not ignored: inside a struct they are
    # noted, as the line-by-line path notes them (the top-level ones come from msgspec).
    options = pa_json.ParseOptions(explicit_schema=typed, unexpected_field_behavior="infer",
                                   newlines_in_values=False)
    for block in line_blocks(stream, start, end):
        lines = block.count(b"\n")
        first = position.next_record
        batch = _json_text_block(block, schema, typed, json_text, options, exact)
        numbers = None if batch is None else _jsonl_numbers(
            block, first, batch.num_rows, lines, _objects_only(block, lines))
        if batch is None or numbers is None:
            yield from _jsonl_slow(block, first, key, json_text)
        else:
            yield _with_source(batch, key, numbers)
        position.next_record = first + lines


def _json_text_block(block: bytes, schema: pa.Schema, typed: pa.Schema,
                     json_text: Sequence[str], options: pa_json.ParseOptions,
                     exact: Mapping[str, pa.DataType]) -> pa.RecordBatch | None:
    """One block as a batch (typed columns by pyarrow, JSON-text and ``exact`` ones as
    the line's text), or None when either decoder refuses it."""
    if not all(pa.types.is_decimal(kind) for kind in exact.values()):
        # A decimal inside an object or a list: the line-by-line path's values (a whole
        # list noted as JSON, say) are the ones its text would not give alike.
        return None
    try:
        records = _RAW_LINES.decode_lines(block)
        table = pa_json.read_json(
            io.BytesIO(block),
            read_options=pa_json.ReadOptions(use_threads=False, block_size=len(block) + 1),
            parse_options=options).select(typed.names) if len(typed) else None
        if table is not None:
            table.validate(full=True)  # see _bulk_block
    except (msgspec.DecodeError, pa.ArrowInvalid, UnicodeDecodeError, ValueError):
        return None
    if table is not None and (table.num_rows != len(records) or not all(
            undeclared_alike(table.column(f.name).combine_chunks(), f.type) for f in typed)):
        return None
    try:
        texts = {name: _text_array([r.get(name) for r in records]) for name in json_text}
        for name in exact:
            values = [r.get(name) for r in records]
            if not _numbers_only(values):
                return None
            texts[name] = _text_array(values)
        known = set(schema.names)
        extra = sorted({k for r in records for k in r} - known)
        texts.update({name: _noted_values([r.get(name) for r in records]) for name in extra})
    except (pa.ArrowInvalid, ValueError):  # bytes that are not UTF-8
        return None
    columns: dict[str, pa.Array] = {} if table is None else {
        name: table.column(name).combine_chunks() for name in table.column_names}
    columns.update(texts)
    if not columns:
        return None
    return pa.RecordBatch.from_arrays(list(columns.values()), names=list(columns))


#: The first bytes of a JSON number.
_NUMBER_STARTS = frozenset(b"-0123456789")


def _numbers_only(values: Sequence[msgspec.Raw | None]) -> bool:
    """Whether each value of a decimal column is a number's literal (or ``null``), which
    the engine types from its text as the line-by-line path types the parsed number
    (the text of a string, ``"1.5"``, is not the string's value)."""
    for value in values:
        if value is not None:
            text = bytes(value)
            if text[0] not in _NUMBER_STARTS and text != b"null":
                return False
    return True


def _text_array(values: Sequence[msgspec.Raw | None]) -> pa.Array:
    """JSON-text values (``null`` and missing keys: null) as a string column."""
    raw = [None if v is None or bytes(v) == b"null" else bytes(v) for v in values]
    return pa.array(raw, pa.binary()).cast(pa.string())


def _noted_values(values: Sequence[msgspec.Raw | None]) -> pa.Array:
    """Values of a key outside the schema as the text the engine notes for them, the
    same as the line-by-line path's note of the decoded value (a string as it is,
    any other value as sorted JSON; a JSON ``null`` is null, noted by neither)."""
    decoded = [None if v is None else json_numbers.loads(bytes(v)) for v in values]
    return pa.array([None if v is None else note_text(v) for v in decoded], pa.string())


def _raw_values(line: bytes, names: Sequence[str]) -> dict[str, JsonText | None]:
    """The text of ``names``' values in one JSON object line (a null for JSON ``null``);
    nothing for a line only Python's parser takes (``NaN``): its values are serialized."""
    try:
        found = _RAW_LINES.decode(line)
    except (msgspec.DecodeError, UnicodeDecodeError):
        return {}
    return {name: None if bytes(found[name]) == b"null" else
            JsonText(bytes(found[name]).decode("utf-8"))
            for name in names if name in found}


# ----------------------------------------------------------------------------- CSV


class _LineStream(io.RawIOBase):
    """A file over an iterator of byte blocks (a header plus a byte range's lines)."""

    def __init__(self, blocks: Iterator[bytes]) -> None:
        self._blocks = blocks
        self._buffer = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._buffer:
            try:
                self._buffer = next(self._blocks)
            except StopIteration:
                return 0
        size = min(len(buffer), len(self._buffer))
        buffer[:size] = self._buffer[:size]
        self._buffer = self._buffer[size:]
        return size


def _decode_columns(batch: pa.RecordBatch, binary: Sequence[str]) -> pa.RecordBatch:
    """Binary CSV columns to UTF-8 strings; invalid bytes become null plus a note."""
    notes: list[list[dict[str, str]]] | None = None
    arrays, names = [], []
    for name, column in zip(batch.schema.names, batch.columns, strict=True):
        if name in binary and pa.types.is_binary(column.type):
            try:
                column = column.cast(pa.string())
            except pa.ArrowInvalid:
                values = []
                notes = notes or [[] for _ in range(batch.num_rows)]
                for row, raw in enumerate(column.to_pylist()):
                    try:
                        values.append(None if raw is None else raw.decode("utf-8"))
                    except UnicodeDecodeError as exc:
                        values.append(None)
                        notes[row].append(_note(f"not valid UTF-8: {exc}", raw, field=name))
                column = pa.array(values, pa.string())
        arrays.append(column)
        names.append(name)
    if notes is not None:
        arrays.append(pa.array([n or None for n in notes], NOTES_TYPE))
        names.append(READER_NOTES)
    return pa.RecordBatch.from_arrays(arrays, names=names)


def _prefix_lines(stream: BinaryIO, fmt: CsvFormat) -> tuple[bytes, bytes]:
    """(every line before the data, the header line or ``b""``)."""
    stream.seek(0)
    lines = [stream.readline() for _ in range(fmt.skip_rows + int(fmt.header))]
    return b"".join(lines), (lines[-1] if fmt.header and lines else b"")


def read_csv(stream: BinaryIO, key: str, schema: pa.Schema, fmt: CsvFormat,
             position: ReadPosition, start: int = 0, end: int | None = None,
             ) -> Iterator[RecordOrBatch]:
    """CSV through pyarrow's streaming reader.

    Columns are read as bytes and decoded here, so one invalid UTF-8 value costs
    that value (null plus a note), not the object; rows with the wrong number of
    columns are rejected with their line (pyarrow's ``invalid_row_handler``).
    Every row keeps its own record number (the row's place in the object; a
    quoted newline does not start a record): a rejected row does not shift the
    good rows after it.  Only an empty unquoted field is null (:data:`CSV_NULLS`).
    """
    if end is not None or start > 0:
        # A byte range: the header line, then the lines that start in the range.
        prefix, header = _prefix_lines(stream, fmt)
        first = max(start, len(prefix))
        if first > len(prefix):
            position.next_record = newlines_before(stream, first - 1) + 1 \
                - prefix.count(b"\n")
        body = line_blocks(stream, first, end)
        source: BinaryIO = io.BufferedReader(
            _LineStream(_chain(header, body)))
    else:
        source = stream
    utf8 = fmt.encoding.lower().replace("_", "-") in ("utf-8", "utf8")
    binary = list(schema.names) if utf8 else []
    # (record number or None, reason, row text) of rows the parser refused.  pyarrow
    # numbers rows from 1 counting the header (not lines: a quoted newline is no row).
    bad: list[tuple[int | None, str, str]] = []
    first_row = 1 + int(fmt.header) + (fmt.skip_rows if start == 0 and end is None else 0)
    base = position.next_record

    def on_invalid(row: Any) -> str:
        line = f" (line {row.number})" if row.number else ""
        record = None if row.number is None else base + row.number - first_row
        bad.append((record, f"expected {row.expected_columns} columns, got "
                    f"{row.actual_columns}{line}", row.text))
        return "skip"

    read_options = pa_csv.ReadOptions(
        use_threads=False, block_size=8 * 1024 * 1024, encoding=fmt.encoding,
        skip_rows=fmt.skip_rows if start == 0 and end is None else 0,
        column_names=fmt.column_names if not fmt.header else None,
        autogenerate_column_names=not fmt.header and not fmt.column_names)
    parse_options = pa_csv.ParseOptions(
        delimiter=fmt.delimiter, quote_char=fmt.quote_char or False,
        newlines_in_values=fmt.newlines_in_values, invalid_row_handler=on_invalid)
    convert_options = pa_csv.ConvertOptions(
        column_types={n: (pa.binary() if utf8 else pa.string()) for n in schema.names},
        null_values=CSV_NULLS, strings_can_be_null=True, quoted_strings_can_be_null=False)
    try:
        reader = pa_csv.open_csv(source, read_options=read_options, parse_options=parse_options,
                                 convert_options=convert_options)
    except pa.ArrowInvalid as exc:
        if "Empty CSV file" in str(exc):
            return
        raise
    for batch in reader:
        yield _with_source(_decode_columns(batch, binary), key,
                           _good_numbers(batch.num_rows, bad, position))
        if bad:
            yield _rejected_rows(key, bad, position)
    if bad:  # rows refused after the last batch
        yield _rejected_rows(key, bad, position)


def _good_numbers(rows: int, bad: list[tuple[int | None, str, str]],
                  position: ReadPosition) -> np.ndarray[Any, Any]:
    """The record numbers of a batch's ``rows`` good rows: the next ones that are not a
    refused row's (the batch's refused rows were seen while it was parsed), so a bad
    row never shifts the good rows after it."""
    begin = position.next_record
    refused = [number for number, _, _ in bad if number is not None and number >= begin]
    numbers = np.arange(begin, begin + rows + len(refused), dtype=np.int64)
    if refused:
        numbers = numbers[~np.isin(numbers, refused)]
    numbers = numbers[:rows]
    if rows:
        position.next_record = int(numbers[-1]) + 1
    return numbers


def _rejected_rows(key: str, bad: list[tuple[int | None, str, str]],
                   position: ReadPosition) -> pa.RecordBatch:
    rejects: Rejects = []
    for number, reason, text in bad:
        if number is None:  # pyarrow did not say which row it was: the next one
            number = position.next_record
        rejects.append((number, reason, text))
        position.next_record = max(position.next_record, number + 1)
    bad.clear()
    return reject_batch(key, rejects)


def _chain(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    if first:
        yield first
    yield from rest


# ----------------------------------------------------------------------------- Parquet


def read_parquet(stream: BinaryIO, key: str, position: ReadPosition,
                 row_groups: Sequence[int] | None = None) -> Iterator[RecordOrBatch]:
    """Row groups of a Parquet object (all of them unless ``row_groups``)."""
    import pyarrow.parquet as pq

    parquet = pq.ParquetFile(stream)
    if row_groups is not None and row_groups:
        metadata = parquet.metadata
        position.next_record = sum(metadata.row_group(i).num_rows
                                   for i in range(row_groups[0]))
    for batch in parquet.iter_batches(batch_size=BATCH_ROWS, row_groups=row_groups,
                                      use_threads=False):
        first = position.next_record
        yield _with_source(batch, key, np.arange(first, first + batch.num_rows, dtype=np.int64))
        position.next_record += batch.num_rows


# ----------------------------------------------------------------------------- Avro


def read_avro(stream: BinaryIO, key: str, position: ReadPosition) -> Iterator[RecordOrBatch]:
    """Avro object container files through fastavro, as dict records."""
    import fastavro

    for record in fastavro.reader(stream):
        if isinstance(record, Mapping):
            row = dict(record)
            row[KEY_COLUMN] = key
            row[RECORD_COLUMN] = position.next_record
            yield row
        else:
            yield reject_batch(key, [(position.next_record,
                                      "an Avro record that is not a record type", record)])
        position.next_record += 1
