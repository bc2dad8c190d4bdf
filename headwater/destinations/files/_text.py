"""JSON Lines and CSV files, written by the executors from a task's Arrow batches.

What runs in the tasks, so plain values only (pickled with the task), as the
shared Parquet writer (``_table_files._parquet.ParquetFiles``) whose output rows
(``FILE_SCHEMA``: one per written file) it shares: the driver commits both alike.

How values are written, so that a reader given the manifest's Arrow schema
gets every value back exactly (``_read.py``; ``docs/destinations/files.md``):

* JSON Lines: one object per row; integers, floats and booleans as JSON
  numbers and booleans (NaN and infinities as the bare ``NaN``/``Infinity``/
  ``-Infinity`` Python, Spark and pyarrow read), decimals as strings holding
  their exact digits (``"12.50"``: a JSON number would become a float in most
  readers), timestamps as ISO 8601 strings (``2026-01-02T03:04:05.123456Z``,
  no ``Z`` for a timestamp without time zone), dates as ``2026-01-02``, bytes as
  base64, structs and lists as JSON objects and arrays; open values (VARIANT,
  ``json_columns``) stay what the table holds: JSON text, in a string.
* CSV: a header, then pyarrow's CSV writer (RFC 4180: strings quoted, a null an
  empty unquoted field, an empty string ``""``; decimals exact, timestamps
  ``2026-01-02 03:04:05.123456Z``, floats ``nan``/``inf``); a struct or list
  column holds each value as the JSON text JSON Lines would write, bytes base64.

A compressed file (``gzip``, ``zstd``) is compressed whole, through pyarrow's
compressed output stream; its name ends ``.gz`` or ``.zst``.
"""

from __future__ import annotations

import base64
import contextlib
import datetime as dt
import decimal
import json
import time
import uuid
from dataclasses import asdict, dataclass
from typing import Any

import pyarrow as pa
import pyarrow.csv as pcsv

from headwater.destinations._table_files._parquet import (
    FILE_SCHEMA,
    TaskFiles,
    WrittenFile,
    iso_timestamp,
)
from headwater.destinations._table_files._store import StoreAccess, TableFolder

#: pyarrow's name of each codec of the config.
_STREAM_CODEC = {"gzip": "gzip", "zstd": "zstd"}


def json_value(value: Any) -> Any:
    """``json.dumps``'s ``default``: what JSON has no type for, as the module docstring says."""
    if isinstance(value, dt.datetime):
        return iso_timestamp(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} has no JSON form here")


def to_json(value: Any) -> str:
    """One value (a row, a struct, a list) as compact JSON text."""
    return json.dumps(value, default=json_value, allow_nan=True, ensure_ascii=False,
                      separators=(",", ":"))


def _is_nested(kind: pa.DataType) -> bool:
    return (pa.types.is_struct(kind) or pa.types.is_list(kind) or pa.types.is_large_list(kind)
            or pa.types.is_map(kind) or pa.types.is_fixed_size_list(kind))


def csv_ready(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with what a CSV field cannot hold as text: nested values as JSON, bytes
    as base64 (see the module docstring)."""
    columns, fields = [], []
    for field, column in zip(batch.schema, batch.columns, strict=True):
        if _is_nested(field.type):
            column = pa.array([None if v is None else to_json(v) for v in column.to_pylist()],
                              pa.string())
        elif pa.types.is_binary(field.type) or pa.types.is_large_binary(field.type):
            column = pa.array([None if v is None else json_value(v) for v in column.to_pylist()],
                              pa.string())
        columns.append(column)
        fields.append(pa.field(field.name, column.type))
    return pa.RecordBatch.from_arrays(columns, schema=pa.schema(fields))


class _TextFile:
    """One JSON Lines or CSV file being written."""

    def __init__(self, folder: TableFolder, name: str, fmt: str, compression: str,
                 schema: pa.Schema) -> None:
        self.folder, self.name, self.format, self.schema = folder, name, fmt, schema
        fs, base = folder.filesystem()
        # compression=None: pyarrow would otherwise compress by the name's extension itself.
        self._raw = fs.open_output_stream(f"{base}/{name}", compression=None)
        codec = _STREAM_CODEC.get(compression)
        self._out = pa.CompressedOutputStream(self._raw, codec) if codec else self._raw
        self._csv: pcsv.CSVWriter | None = None
        self.rows = 0
        self.rejected = 0

    def write(self, batch: pa.RecordBatch) -> None:
        if self.format == "jsonl":
            self._out.write("".join(to_json(row) + "\n" for row in batch.to_pylist())
                            .encode("utf-8"))
        else:
            ready = csv_ready(batch)
            if self._csv is None:
                self._csv = pcsv.CSVWriter(self._out, ready.schema)
            self._csv.write_batch(ready)
        self.rows += batch.num_rows
        if "_hw_notes" in batch.schema.names:
            self.rejected += batch.num_rows - batch.column("_hw_notes").null_count

    def close(self) -> pa.RecordBatch:
        if self._csv is not None:
            self._csv.close()
        self._out.close()
        if self._out is not self._raw:
            self._raw.close()
        size, modified_ms = self.folder.size_and_mtime_ms(self.name)
        written = WrittenFile(path=self.name, size=size,
                              modified_ms=modified_ms or int(time.time() * 1000),
                              rows=self.rows, rejected=self.rejected, stats="{}")
        return pa.RecordBatch.from_pylist([asdict(written)], schema=FILE_SCHEMA)

    def abandon(self) -> None:
        with contextlib.suppress(Exception):
            self._out.close()
        with contextlib.suppress(OSError):
            self.folder.delete_file(self.name)


@dataclass(frozen=True)
class TextFiles(TaskFiles):
    """Writes a task's batches into JSON Lines or CSV files under ``folder`` (the
    ``FileWriter`` of a ``jsonl`` or ``csv`` destination)."""

    #: A local path, or ``<scheme>://bucket/key`` with ``store`` (``TableFolder.uri``).
    folder: str
    format: str
    compression: str
    #: What a file's name ends with (``.jsonl.gz``).
    extension: str
    #: The writing run's tag (``run_file_tag``), put in every file's name.
    name_tag: str
    store: StoreAccess | None = None
    #: A file is closed, and another begun, after this many rows.
    max_rows_per_file: int = 1_000_000

    def start(self, batch: pa.RecordBatch) -> _TextFile:
        name = (f"part-{uuid.uuid4()}-c000" + (f".{self.name_tag}" if self.name_tag else "")
                + self.extension)
        return _TextFile(TableFolder(self.folder, self.store), name, self.format,
                         self.compression, batch.schema)

    def is_full(self, file: Any) -> bool:
        return bool(file.rows >= self.max_rows_per_file)


__all__ = ["TextFiles", "csv_ready", "json_value", "to_json"]
