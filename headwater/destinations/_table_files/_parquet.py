"""Executors write a checkpoint's Parquet files themselves; the driver commits them.

Why: handing Arrow batches to Spark's Delta writer makes the JVM turn every
column back into rows, then into Parquet, with file statistics computed per
row in interpreted code.  On this machine that was about 80 % of a sync of
object-storage files, and the JVM's JIT warm-up of that path was most of a
first sync's fixed cost (``bench/RESULTS.md``).  pyarrow writes the same
Parquet from the same Arrow batches in native code, in the Python task that
already holds them, so the Spark job only returns one small row per file and
the commit (``_delta_rs.py``) adds those files to the table in one transaction.

This module is what runs on the executors, so it holds only plain values and is
pickled with the task.  A file is written under the table's folder with a
unique name: a task that fails or is retried leaves at most an uncommitted
file, which no reader sees and ``VACUUM`` removes, as with Spark's own writer.
The folder is local, or on S3 or Azure (``_store.TableFolder``): there each
executor uploads its files straight to the table's prefix (pyarrow's S3 and Azure
filesystems), and an object is seen only once its upload completes.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol, get_type_hints

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from headwater.destinations._table_files._store import StoreAccess, TableFolder


@dataclass(frozen=True)
class WrittenFile:
    """One file a task wrote: what the driver collects and commits (a row of FILE_SCHEMA)."""

    #: Relative to the table's folder, as Delta's ``add`` action names it.
    path: str
    size: int
    modified_ms: int
    rows: int
    #: Rows that carry notes (values that did not fit the schema).
    rejected: int
    #: Delta's per-file statistics, as the JSON its ``add`` action carries.
    stats: str


#: The Arrow type of each Python type a WrittenFile field has.
_ARROW_TYPES = {str: pa.string(), int: pa.int64()}

#: The rows each written file describes, one column per WrittenFile field.
FILE_SCHEMA = pa.schema([
    pa.field(name, _ARROW_TYPES[type_], nullable=False)
    for name, type_ in get_type_hints(WrittenFile).items()])

#: Strings longer than this get no maximum statistic (a prefix would be wrong as
#: a maximum) and a prefix as minimum, as Delta's writer does with its 32.
STRING_STATS_PREFIX = 32

#: A row group is written once this many rows (or bytes of Arrow data) are gathered:
#: about the 128 MiB row groups of Spark's writer once encoded and compressed.
ROW_GROUP_ROWS = 1_000_000
ROW_GROUP_BYTES = 128 * 2**20

ArrowTask = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


@dataclass
class _ColumnStats:
    """Delta's per-file statistics of one column, merged batch by batch."""

    nulls: int = 0
    low: Any = None
    high: Any = None
    #: False once a value was seen whose bounds cannot be written exactly.
    bounded: bool = True

    def add(self, values: pa.Array | pa.ChunkedArray) -> None:
        self.nulls += values.null_count
        if not self.bounded or values.null_count == len(values):
            return
        extremes = pc.min_max(values)
        low, high = extremes["min"].as_py(), extremes["max"].as_py()
        self.low = low if self.low is None else min(self.low, low)
        self.high = high if self.high is None else max(self.high, high)


def iso_timestamp(value: dt.datetime) -> str:
    """ISO 8601 with microseconds: UTC with a ``Z``, a time without zone without one."""
    if value.tzinfo is None:
        return value.isoformat(timespec="microseconds")
    return value.astimezone(dt.UTC).replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def _json_bound(value: Any, *, is_max: bool) -> Any:
    """A statistic as Delta writes it in JSON, or None when it cannot be exact."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, dt.datetime):
        # timestamp_ntz: a wall-clock time with no zone, as Delta-Spark writes it;
        # Spark parses an ntz statistic with a `Z` as null, so no file was skipped.
        return iso_timestamp(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, str):
        if len(value) <= STRING_STATS_PREFIX:
            return value
        return None if is_max else value[:STRING_STATS_PREFIX]
    return None  # floats (NaN), decimals, bytes: null count only


def _leaf_paths(schema: pa.Schema) -> dict[str, pa.DataType]:
    """Every Parquet leaf column of ``schema`` by its dotted path, as ParquetWriter names them."""
    leaves: dict[str, pa.DataType] = {}

    def walk(path: str, type_: pa.DataType) -> None:
        if pa.types.is_struct(type_):
            for child in type_:
                walk(f"{path}.{child.name}", child.type)
        elif pa.types.is_map(type_):
            walk(f"{path}.key_value.key", type_.key_type)
            walk(f"{path}.key_value.value", type_.item_type)
        elif (pa.types.is_list(type_) or pa.types.is_large_list(type_)
              or pa.types.is_fixed_size_list(type_)):
            walk(f"{path}.list.element", type_.value_type)
        else:
            leaves[path] = type_

    for field in schema:
        walk(field.name, field.type)
    return leaves


def _float_leaves(schema: pa.Schema) -> set[str]:
    return {path for path, type_ in _leaf_paths(schema).items() if pa.types.is_floating(type_)}


def _has_bounds(type_: pa.DataType) -> bool:
    return (pa.types.is_integer(type_) or pa.types.is_timestamp(type_)
            or pa.types.is_date(type_) or pa.types.is_string(type_)
            or pa.types.is_large_string(type_))


class WritingFile(Protocol):
    """A file a task is writing (a Parquet file here; JSON Lines or CSV elsewhere)."""

    #: The schema of the batches it takes (a batch encoded otherwise is cast to it).
    schema: pa.Schema
    rows: int

    def write(self, batch: pa.RecordBatch) -> None: ...

    def close(self) -> pa.RecordBatch:
        """Finish the file; one row of ``FILE_SCHEMA`` describing it."""
        ...

    def abandon(self) -> None:
        """Remove the unfinished file (the task failed)."""
        ...


class TaskFiles(ABC):
    """What runs around a task's output batches: the batches go into files (a new one
    once :meth:`is_full`), one row of ``FILE_SCHEMA`` comes out per file.  A format's
    writer says how a file is begun (:meth:`start`)."""

    @property
    def schema(self) -> pa.Schema:
        return FILE_SCHEMA

    def around(self, task: ArrowTask) -> ArrowTask:
        """The ``mapInArrow`` function: ``task``'s batches go to files, file rows come out."""
        writer = self

        def run(positions: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            yield from writer.write(task(positions))

        return run

    def write(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        current: WritingFile | None = None
        try:
            for batch in batches:
                if batch.num_rows == 0:
                    continue
                if current is None:
                    current = self.start(batch)
                elif batch.schema != current.schema:
                    # One file has one schema; a batch that differs only in how it is
                    # encoded (nullability, a dictionary) is cast to the file's.
                    batch = batch.cast(current.schema)
                current.write(batch)
                if self.is_full(current):
                    yield current.close()
                    current = None
            if current is not None:
                yield current.close()
                current = None
        finally:
            if current is not None:  # the task failed: leave no half-written file behind
                current.abandon()

    @abstractmethod
    def start(self, batch: pa.RecordBatch) -> WritingFile:
        """A new file for ``batch`` and the batches after it."""

    @abstractmethod
    def is_full(self, file: Any) -> bool:
        """Whether ``file`` is to be closed (and another started) now."""


@dataclass
class ParquetFiles(TaskFiles):
    """Writes a task's output batches into Parquet files under ``folder`` (local or a store).

    ``stats_columns`` are the table's statistics columns
    (``delta.dataSkippingStatsColumns``): each file's Delta statistics cover
    them, so readers skip files as they would for files Spark wrote.
    """

    #: A local path, or ``<scheme>://bucket/key`` with ``store`` (``_store.TableFolder.uri``).
    folder: str
    stats_columns: Sequence[str]
    #: A file is closed and a new one started after this many rows.
    max_rows_per_file: int = 5_000_000
    compression: str = "snappy"
    #: How the executors reach ``folder`` on S3 or Azure (None: a local folder).
    store: StoreAccess | None = None
    #: The codec's level (None: its default), as a table asks for it (Iceberg's
    #: ``write.parquet.compression-level``).
    compression_level: int | None = None
    #: A file is also closed once this many bytes of Arrow data went into it (None: no
    #: limit): a table's target file size (Iceberg's ``write.target-file-size-bytes``),
    #: met from above since the file holds them encoded and compressed.
    max_bytes_per_file: int | None = None
    #: Put in every file's name (``run_file_tag``): which run wrote a file the table's log or
    #: snapshots do not name yet, so a failed checkpoint's files can be told from another
    #: writer's files in flight (``destinations/_uncommitted.py``).  Empty: Spark's names.
    name_tag: str = ""

    def start(self, batch: pa.RecordBatch) -> _File:
        return self.open_file(batch.schema,
                              [c for c in self.stats_columns if c in batch.schema.names])

    def open_file(self, schema: pa.Schema, stats_columns: Sequence[str]) -> _File:
        """A new file in ``folder``, written as this writer's settings say."""
        return _File.open(TableFolder(self.folder, self.store), schema, self.compression,
                          stats_columns, compression_level=self.compression_level,
                          name_tag=self.name_tag)

    def is_full(self, file: Any) -> bool:
        """Whether ``file`` is to be closed (and another started) now."""
        return file.rows >= self.max_rows_per_file or (
            self.max_bytes_per_file is not None and file.bytes >= self.max_bytes_per_file)


class _File:
    def __init__(self, folder: TableFolder, name: str, writer: pq.ParquetWriter,
                 stats: dict[str, _ColumnStats]) -> None:
        self.folder, self.name, self.writer, self.stats = folder, name, writer, stats
        self.schema: pa.Schema = writer.schema
        self.pending: list[pa.RecordBatch] = []
        self.pending_rows = 0
        self.pending_bytes = 0
        self.rows = 0
        #: Bytes of Arrow data written (before encoding and compression).
        self.bytes = 0
        self.rejected = 0

    @classmethod
    def open(cls, table: str | TableFolder, schema: pa.Schema, compression: str,
             stats_columns: Sequence[str], *, compression_level: int | None = None,
             name_tag: str = "") -> _File:
        folder = TableFolder.of(table)
        # Spark's naming, so the table's folder looks the same whoever wrote a file (with
        # the writing run's tag before the extensions, when there is one).
        stem = f"part-{uuid.uuid4()}-c000" + (f".{name_tag}" if name_tag else "")
        name = f"{stem}.parquet" if compression == "none" else f"{stem}.{compression}.parquet"
        plain = _float_leaves(schema)
        others = [path for path in _leaf_paths(schema) if path not in plain]
        where, filesystem = folder.write_target(name)
        writer = pq.ParquetWriter(
            where, schema, filesystem=filesystem, compression=compression,
            compression_level=compression_level,
            # No row-group statistics and no dictionary on float and double columns,
            # nested ones included, so Spark never skips a row group by them (issue 16).
            # Arrow leaves NaN out of a column's min/max (as the Parquet format advises),
            # but Spark's reader (parquet-mr) takes those bounds as complete while Spark
            # orders NaN above every number and `x = NaN` holds: a row group of [1.0, NaN]
            # was skipped for `x > 5`, `x >= 2.5` and `x = NaN`.  parquet-mr's own files
            # put NaN in the max, which makes its reader ignore the bounds, a rule Arrow
            # has no option for.  Its dictionary filter tests membership with Java's
            # equals, which tells -0.0 from 0.0 where Spark's `=` does not: a row group
            # whose dictionary held -0.0 was skipped for `x = 0.0`.  Without either, a
            # float predicate reads every row group, as over parquet-mr's files holding
            # a NaN; Delta's file statistics never had float bounds (_json_bound).
            use_dictionary=others, write_statistics=others)
        stats = {column: _ColumnStats(bounded=_has_bounds(schema.field(column).type))
                 for column in stats_columns}
        return cls(folder, name, writer, stats)

    def write(self, batch: pa.RecordBatch) -> None:
        # Every ParquetWriter call makes at least one row group, and sources hand over
        # small batches (an Airbyte connector's state interval, an API page): gather
        # them into row groups of a size readers scan well.
        self.pending.append(batch)
        self.pending_rows += batch.num_rows
        self.pending_bytes += batch.nbytes
        if self.pending_rows >= ROW_GROUP_ROWS or self.pending_bytes >= ROW_GROUP_BYTES:
            self._flush()
        self.rows += batch.num_rows
        self.bytes += batch.nbytes
        if "_hw_notes" in batch.schema.names:
            notes = batch.column("_hw_notes")
            self.rejected += batch.num_rows - notes.null_count
        for column, stats in self.stats.items():
            stats.add(batch.column(column))

    def _flush(self) -> None:
        if self.pending:
            self.writer.write_table(pa.Table.from_batches(self.pending, self.schema),
                                    row_group_size=self.pending_rows)
        self.pending, self.pending_rows, self.pending_bytes = [], 0, 0

    def close(self) -> pa.RecordBatch:
        self._flush()
        self.writer.close()
        size, modified_ms = self.folder.size_and_mtime_ms(self.name)
        written = WrittenFile(
            path=self.name, size=size, modified_ms=modified_ms or int(time.time() * 1000),
            rows=self.rows, rejected=self.rejected, stats=self._stats_json())
        return pa.RecordBatch.from_pylist([asdict(written)], schema=FILE_SCHEMA)

    def abandon(self) -> None:
        try:
            self.writer.close()
        finally:
            with contextlib.suppress(OSError):
                self.folder.delete_file(self.name)

    def _stats_json(self) -> str:
        low: dict[str, Any] = {}
        high: dict[str, Any] = {}
        for column, stats in self.stats.items():
            if stats.low is None or not stats.bounded:
                continue
            lower = _json_bound(stats.low, is_max=False)
            upper = _json_bound(stats.high, is_max=True)
            if lower is not None:
                low[column] = lower
            if upper is not None:
                high[column] = upper
        document = {"numRecords": self.rows, "minValues": low, "maxValues": high,
                    "nullCount": {c: s.nulls for c, s in self.stats.items()}}
        return json.dumps(document, separators=(",", ":"))
