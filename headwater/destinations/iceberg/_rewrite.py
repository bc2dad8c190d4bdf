"""Copy-on-write at file granularity: Spark tasks read a table's data files, rewrite some,
one snapshot.

Why: Spark 4.2 has no Iceberg runtime, so Spark cannot read or write the
tables as Iceberg.  But an Iceberg table that holds no delete files is exactly
its current data files, read by column name (the table's name mapping;
Headwater renames no column).  So ``append_dedup`` (``_merge.py``),
``headwater replay`` and ``state realign``'s counts and deletes work like
Delta's copy-on-write: find the files holding rows to change, write them again
without those rows (plus any new rows), and commit one ``overwrite`` snapshot
that removes the old files and adds the new ones.

Where the files are does not matter here: a file is named by the URI the table
holds (``file://...`` or ``s3://bucket/...``), and :func:`locate` turns it into
a pyarrow filesystem and a path, the S3 one built from the destination's
``S3Access`` (the settings the tasks already write with; nothing else
configures the store).  Spark's tasks read the files with pyarrow
(:func:`read_files`, ``mapInArrow`` over the list of paths, only the columns
asked for), so Spark itself needs no S3 connector and a local warehouse and an
S3 one run the same code.

The new files are written by the same pyarrow writer as the tasks' files
(``ParquetFiles``), from Spark's Arrow batches cast to the table's own Arrow
schema, so PyIceberg accepts them (INT64 timestamps, the table's column names
and types) and Spark's reader agrees with them on edge values.

Concurrency (:func:`commit_rewrite`): a rewrite is computed against one
snapshot, and its commit asserts that snapshot is still the branch's head.
PyIceberg, finding another writer's commit there, re-applies the snapshot on
the new head only when its validation finds no conflict: under the table's
isolation level (``serializable`` by default) any data file added or removed
meanwhile is one, and a file the rewrite removes must still exist under any
level.  A conflict (``ValidationException``, or ``CommitFailedException`` once
its retries are spent) deletes the files the rewrite wrote and computes it
again against the new table state, a few times, then fails: a rewrite computed
on a stale snapshot is never committed, and another writer's rows are never
dropped (only files the rewrite read are removed).  A table set to
``snapshot`` isolation lets a concurrent append through: its rows stay, and a
key it shares with the checkpoint may then be in the table twice.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import pyarrow as pa
import pyarrow.parquet as pq

from headwater.destinations._merge_rule import quote
from headwater.destinations._read_frames import conform
from headwater.destinations._table_files._parquet import FILE_SCHEMA, WrittenFile
from headwater.destinations._table_files._store import (
    S3Access,
    StoreAccess,
    TableFolder,
    s3_bucket_and_key,
)
from headwater.destinations.iceberg import _commit, _config
from headwater.destinations.iceberg._layout import files_writer, partition_keys
from headwater.destinations.iceberg._properties import FileSettings, file_settings
from headwater.destinations.iceberg._schema import small_types
from headwater.errors import DestinationError

if TYPE_CHECKING:
    import pyarrow.fs as pafs
    from pyiceberg.manifest import DataFile
    from pyiceberg.table import Table
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

log = logging.getLogger(__name__)

#: The column holding the file a row was read from (:func:`read_files` ``with_file``).
FILE_COLUMN = "_hw_file"

#: How often a rewrite is computed again after another writer committed first.
REWRITE_TRIES = 4

T = TypeVar("T")


def data_files(table: Table, stream: str) -> list[DataFile]:
    """The table's current data files; refused when it has delete files.

    Headwater never writes delete files, but another engine may have (a
    merge-on-read ``DELETE``); Spark reading the data files alone would then
    bring deleted rows back, so nothing is rewritten.
    """
    from pyiceberg.manifest import ManifestContent

    snapshot = table.current_snapshot()
    if snapshot is None:
        return []
    for manifest in snapshot.manifests(table.io):
        if manifest.content == ManifestContent.DELETES and any(
                True for _ in manifest.fetch_manifest_entry(table.io, discard_deleted=True)):
            raise DestinationError(
                f"Iceberg table {'.'.join(table.name())} holds delete files (written by another "
                "engine): Headwater rewrites data files copy-on-write and cannot apply them; "
                "compact the table (rewrite_data_files) first", stream=stream)
    return _commit.current_data_files(table)


def local(path: str) -> str:
    """A data file's path as the table names it (``file://`` and the plain path) as a local one."""
    found = _config.local_path(path)
    if found is None:
        raise ValueError(f"not a local file: {path}")
    return found


def locate(path: str, store: StoreAccess | None) -> tuple[pafs.FileSystem, str]:
    """The pyarrow filesystem holding the data file ``path`` names, and its path in it.

    ``s3://`` and ``s3a://`` (a table in an S3 warehouse; ``store`` is how this
    process or task reaches the bucket, the destination's one ``S3Access``), else a
    local file (``file://`` or a plain path).  Runs on the executors too.
    """
    from pyarrow import fs as pafs

    parts = s3_bucket_and_key(path)
    if parts is None:
        return pafs.LocalFileSystem(), local(path)
    if not isinstance(store, S3Access):
        raise ValueError(f"{path} is on S3, and the table's store is not")
    return store.filesystem(), "/".join(parts)


def arrow_schema(table: Table) -> pa.Schema:
    """The table's columns as the Arrow schema its files are written with (no field ids)."""
    from pyiceberg.io.pyarrow import schema_to_pyarrow

    converted = schema_to_pyarrow(table.schema(), include_field_ids=False)
    return pa.schema([pa.field(f.name, small_types(f.type)) for f in converted])


def spark_schema(table: Table) -> StructType:
    """The table's columns as Spark reads its files."""
    from pyspark.sql.pandas.types import from_arrow_schema

    return from_arrow_schema(arrow_schema(table))


@dataclass(frozen=True)
class _ReadFiles:
    """What each Spark task runs: the data files its rows name, read by pyarrow, as batches.

    The same filesystem the tasks write through (:func:`locate`), so a table on S3
    is read with the destination's own settings, and Spark needs no S3 connector.
    Columns are read by name and cast to the table's types; a column a file lacks
    (it predates the column) is null.  Plain values only: pickled to the executors.
    """

    store: StoreAccess | None
    #: The columns to read, as the table types them.
    schema: pa.Schema
    with_file: bool

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for path in batch.column(0).to_pylist():
                yield from self._read(path)

    def _read(self, path: str) -> Iterator[pa.RecordBatch]:
        filesystem, where = locate(path, self.store)
        with filesystem.open_input_file(where) as source:
            parquet = pq.ParquetFile(source)
            present = set(parquet.schema_arrow.names)
            # None of the columns asked for: one other column read for its row count only.
            wanted = ([n for n in self.schema.names if n in present]
                      or parquet.schema_arrow.names[:1])
            for piece in parquet.iter_batches(columns=wanted):
                yield self._conform(piece, path)

    def _conform(self, piece: pa.RecordBatch, path: str) -> pa.RecordBatch:
        conformed = conform(piece, self.schema)
        if not self.with_file:
            return conformed
        return conformed.append_column(pa.field(FILE_COLUMN, pa.string()),
                                       pa.array([path] * piece.num_rows, pa.string()))


def read_files(spark: SparkSession, table: Table, paths: Sequence[str], *,
               store: StoreAccess | None = None, with_file: bool = False,
               columns: Sequence[str] | None = None) -> DataFrame:
    """The rows of the data files at ``paths`` (as the table names them), the table's
    ``columns`` (default: every one; nulls where a file predates a column), plus
    :data:`FILE_COLUMN` (the file's path as given) if asked.

    Executors read the files (one Spark task per group of files), with pyarrow
    through ``store`` (:class:`_ReadFiles`): rows never travel through the driver.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema

    schema = arrow_schema(table)
    if columns is not None:
        schema = pa.schema([schema.field(c) for c in dict.fromkeys(columns)])
    if not paths:
        frame = spark.createDataFrame([], from_arrow_schema(schema))
        return frame.withColumn(FILE_COLUMN, F.lit(None).cast("string")) if with_file else frame
    output = schema.append(pa.field(FILE_COLUMN, pa.string())) if with_file else schema
    slices = max(1, min(len(paths), spark.sparkContext.defaultParallelism))
    names = spark.sparkContext.parallelize([(p,) for p in paths], slices).toDF(["path"])
    return names.mapInArrow(_ReadFiles(store, schema, with_file), from_arrow_schema(output))


@dataclass(frozen=True)
class _TableFiles:
    """What each Spark task runs: its Arrow batches, cast to the table's schema, into files.

    Plain values only: pickled to the executors.
    """

    folder: TableFolder
    schema: pa.Schema
    #: The table's partition fields (``_layout.partition_keys``; empty: unpartitioned):
    #: a partitioned table gets one file per partition value, as from the tasks.
    keys: tuple[Any, ...] = ()
    #: How the table's properties ask its files to be written (codec, target size).
    settings: FileSettings = field(default_factory=FileSettings)

    def __call__(self, batches: Any) -> Any:
        writer = files_writer(self.settings, self.folder, self.keys)
        return writer.write(batch.select(self.schema.names).cast(self.schema)
                            for batch in batches)


def write_files(frame: DataFrame, table: Table, folder: TableFolder) -> list[WrittenFile]:
    """Write ``frame`` (the table's columns) as Parquet files into ``folder``; the files.

    Executors write (``mapInArrow``) with the tasks' writer, locally or to the
    store, the driver gets one row per file.
    """
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema

    schema = arrow_schema(table)
    types = {f.name: f.dataType for f in spark_schema(table)}
    columns = [F.col(quote(n)) if n in frame.columns else F.lit(None).cast(types[n]).alias(n)
               for n in schema.names]  # a column the rows lack (the source dropped it): nulls
    files = frame.select(*columns).mapInArrow(_TableFiles(folder, schema, partition_keys(table),
                                                          file_settings(table.properties)),
                                              from_arrow_schema(FILE_SCHEMA))
    return [WrittenFile(**row.asDict()) for row in files.collect()]


def file_uri(folder: TableFolder, relative: str) -> str:
    """The URI a file written at ``relative`` in ``folder`` is added to the table under:
    ``file://...`` (a local folder) or ``s3://bucket/...``."""
    if folder.is_local:
        return f"file://{folder.local_path(relative)}"
    return f"{folder.uri.rstrip('/')}/{relative}"


def uri(folder: TableFolder, file: WrittenFile) -> str:
    """The URI a written file is added to the table under (:func:`file_uri`)."""
    return file_uri(folder, file.path)


@dataclass
class Rewrite:
    """One copy-on-write change, computed against one snapshot of the table."""

    #: Files to add (``file://`` or ``s3://`` URIs, as the table names them).
    adding: list[str]
    #: Current data files the snapshot removes.
    removing: list[DataFile]
    #: Files this computation wrote (deleted again when its commit is abandoned).
    written: list[str] = field(default_factory=list)
    #: Figures the caller wants back (rows kept, deleted...).
    figures: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Committed(Generic[T]):
    """A rewrite's commit: the snapshot made and the rewrite (or what an earlier attempt landed)."""

    snapshot_id: int | None
    rewrite: Rewrite | None = None
    earlier: T | None = None
    #: Bytes of the files the snapshot added (their sizes as the commit read them).
    added_bytes: int = 0


def commit_rewrite(load: Callable[[], Table], lock: contextlib.AbstractContextManager[Any],
                   compute: Callable[[Table], Rewrite], *, summary: dict[str, str],
                   properties: dict[str, str], earlier: Callable[[Table], T | None],
                   stream: str, what: str, commit_empty: bool = True,
                   store: StoreAccess | None = None) -> Committed[T]:
    """Compute ``compute``'s rewrite against the table as it is and commit it, in one snapshot.

    ``earlier`` looks for the commit in the table first (an earlier attempt's: then
    nothing is computed).  A commit that fails because another writer committed
    first is computed again against the new state, the files of the abandoned
    computation deleted (through ``store`` when the table is on S3); any other
    error is raised as it is (the caller finds out whether the snapshot landed
    anyway).  A rewrite that changes nothing is committed only with
    ``commit_empty`` (a checkpoint's marker must land even when its batch changed
    nothing).
    """
    from pyiceberg.exceptions import CommitFailedException, ValidationException

    for tried in range(1, REWRITE_TRIES + 1):
        with lock:
            table = load()
            found = earlier(table)
        if found is not None:
            return Committed(snapshot_id=None, earlier=found)
        rewrite = compute(table)
        if not (commit_empty or rewrite.adding or rewrite.removing):
            return Committed(snapshot_id=None, rewrite=rewrite)  # nothing to change
        added = _commit.data_files(table, rewrite.adding)
        try:
            with lock:
                snapshot_id = _commit.commit(table, added, overwrite=False, summary=summary,
                                             properties=properties, removing=rewrite.removing)
        except (CommitFailedException, ValidationException) as exc:
            discard(rewrite.written, store)
            if tried == REWRITE_TRIES:
                raise DestinationError(
                    f"{what}: another writer committed to the table {tried} times while the "
                    "rewrite was computed; nothing was committed, try again", stream=stream,
                ) from exc
            log.info("%s: another writer committed first; computing the rewrite again", what)
            continue
        return Committed(snapshot_id=snapshot_id, rewrite=rewrite,
                         added_bytes=sum(f.file_size_in_bytes for f in added))
    raise AssertionError("unreachable")


def discard(paths: Sequence[str], store: StoreAccess | None = None) -> None:
    """Delete files no snapshot references (a rewrite abandoned, inputs that stay out)."""
    for path in paths:
        with contextlib.suppress(OSError, ValueError):
            filesystem, where = locate(path, store)
            filesystem.delete_file(where)


def holding(spark: SparkSession, table: Table, candidates: Sequence[DataFile], where: Any, *,
            columns: Sequence[str], store: StoreAccess | None = None) -> list[DataFile]:
    """The files among ``candidates`` with at least one row for which Spark's ``where`` holds
    (``where`` reads only ``columns``)."""
    if not candidates:
        return []
    frame = read_files(spark, table, [f.file_path for f in candidates], store=store,
                       with_file=True, columns=columns)
    found = {r[0] for r in frame.where(where).select(FILE_COLUMN).distinct().collect()}
    return [f for f in candidates if f.file_path in found]


def runs_candidates(table: Table, current: Sequence[DataFile],
                    run_ids: Sequence[str]) -> list[DataFile]:
    """The current files that may hold rows of ``run_ids``, by the files' column bounds.

    PyIceberg's scan planning prunes by each file's ``_hw_run_id`` bounds (kept in
    the manifests); what it keeps may still hold none (Spark checks: :func:`holding`).
    """
    from pyiceberg.expressions import In

    # ``In.__new__`` takes (term, literals); pydantic's generated signature says otherwise.
    wanted = In("_hw_run_id", list(run_ids))  # type: ignore[call-arg,arg-type]
    planned = {t.file.file_path for t in table.scan(row_filter=wanted).plan_files()}
    return [f for f in current if f.file_path in planned]


def without_runs(spark: SparkSession, table: Table, folder: TableFolder, stream: str,
                 run_ids: Sequence[str], checkpoints: Sequence[int] | None = None) -> Rewrite:
    """The rewrite removing every row of ``run_ids`` (of those written in ``checkpoints``
    only, when given: ``_hw_checkpoint``): the files holding some, rewritten without
    them into ``folder`` (the table's data folder)."""
    from pyspark.sql import functions as F

    current = data_files(table, stream)
    gone = F.col("_hw_run_id").isin(list(run_ids))
    columns = ["_hw_run_id"]
    if checkpoints is not None:
        gone = gone & F.col("_hw_checkpoint").isin([int(c) for c in checkpoints])
        columns.append("_hw_checkpoint")
    touched = holding(spark, table, runs_candidates(table, current, run_ids), gone,
                      columns=columns, store=folder.store)
    if not touched:
        return Rewrite(adding=[], removing=[], figures={"deleted": 0})
    kept = read_files(spark, table, [f.file_path for f in touched], store=folder.store).where(
        ~F.coalesce(gone, F.lit(False)))
    files = write_files(kept, table, folder)
    written = [uri(folder, f) for f in files]
    deleted = sum(int(f.record_count) for f in touched) - sum(f.rows for f in files)
    return Rewrite(adding=written, removing=touched, written=written,
                   figures={"deleted": deleted})


__all__ = ["FILE_COLUMN", "REWRITE_TRIES", "Committed", "Rewrite", "arrow_schema",
           "commit_rewrite", "data_files", "discard", "file_uri", "holding", "local", "locate",
           "read_files", "runs_candidates", "spark_schema", "uri", "without_runs",
           "write_files"]
