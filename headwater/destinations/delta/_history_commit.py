"""History's own commit on Delta: closed versions marked by deletion vectors, new rows in
task-written files, one conditional put of the next log entry.

Why not Spark's MERGE: a history checkpoint closes versions spread over every file of
the table.  Delta's MERGE with deletion vectors does what is needed (writes the
opened versions and the closed copies, marks the old rows deleted) but in some twenty
jobs over three phases, each re-planning its source and with driver work between
them; at 1,000,000 keys with 10 % changed it took 2.5 times a plain SCD2 MERGE that
rewrites every file (``bench/RESULTS.md``).  The rule's own pass already knows, per
closing row, the stored version it closes; read with the file and row position it
sits at (``_metadata.file_path``, ``_metadata.row_index``), that is the deletion
vector.  So: the tasks write the new rows (``_table_files/_parquet.py``), the driver
writes one vector file (``_deletion_vectors.py``) and the commit, which re-adds each
touched file with its vector (the old ``add`` removed by path *and* old vector,
``_live_files.py``).

Why it is safe to commit without Delta's conflict checks: every row the commit
writes or deletes was computed from the table read at one version ``v``, and the
commit is the log entry ``v + 1``, put only if absent (``_table_files/_create.py``:
a local link, S3's and Azure's ``If-None-Match``).  Another writer's commit after
``v`` takes that name first: this commit is refused whole, and the checkpoint reads
the table again.  Idempotent by the same ``txn`` pair as Spark's writes.

Used only where ``history_refusal`` allows (the task path's allowlist, and the table
has deletion vectors on); Spark's MERGE everywhere else.  ``test_history_commit.py``
holds the tables it leaves equal, row for row and through Spark's reads, to the ones
Spark's MERGE leaves from the same checkpoints.
"""

from __future__ import annotations

import itertools
import json
import logging
import time
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from headwater.destinations._history_rule import IS_CURRENT, VALID_TO, WAS
from headwater.destinations._merge_rule import quote
from headwater.destinations._table_files._create import create_text
from headwater.destinations._table_files._parquet import (
    FILE_SCHEMA,
    ArrowTask,
    ParquetFiles,
    WrittenFile,
)
from headwater.destinations._table_files._store import TableFolder
from headwater.destinations.delta import _deletion_vectors
from headwater.destinations.delta._delta_rs import commit_file
from headwater.destinations.delta._live_files import LiveFiles
from headwater.destinations.delta._live_rows import FILE_COLUMN, ROW_COLUMN
from headwater.destinations.delta._table_features import TableProtocol, task_path_refusal
from headwater.errors import DestinationError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.types import StructType

log = logging.getLogger(__name__)

#: The start of this commit's ``engineInfo`` (``_commit_lookup._writer_of`` reads it).
ENGINE_INFO = "Headwater history commit"
#: Where a closed version is stored (its file as Spark names it, its row), beside its copy.
CLOSED_FILE, CLOSED_ROW = "_hw_closed_file", "_hw_closed_row"
#: What the writing task gives back: a written file's row (``FILE_SCHEMA``, the closed
#: columns null) or a stored file's closed rows (the written file's columns null).
_OUTPUT = pa.schema([*(f.with_nullable(True) for f in FILE_SCHEMA),
                     pa.field(CLOSED_FILE, pa.string()),
                     pa.field(CLOSED_ROW, pa.list_(pa.int64()))])


def history_refusal(protocol: TableProtocol) -> str | None:
    """Why a history checkpoint may not commit to this table itself (Spark's MERGE
    does), or None when it may."""
    refusal = task_path_refusal(protocol)
    if refusal is not None:
        return refusal
    if "deletionVectors" not in protocol.writer_features:
        return "table has no deletion vectors (its protocol lists no deletionVectors feature)"
    enabled = str(protocol.properties.get("delta.enableDeletionVectors", "false")).lower()
    if enabled != "true":
        return "table has deletion vectors off (delta.enableDeletionVectors)"
    return None


def new_rows(source: DataFrame, table_schema: StructType, *, action: str) -> DataFrame:
    """The rows the commit adds, in the table's columns: the opened versions, and a copy
    of each closed version as stored with its ``_hw_valid_to`` and ``_hw_is_current``;
    and, on a closed version's copy, where the version it copies is stored
    (:data:`CLOSED_FILE`, :data:`CLOSED_ROW`: null on an opened one)."""
    from pyspark.sql import functions as F

    is_close = F.col(action) == F.lit("close")
    present = set(source.columns)
    columns = [F.when(is_close, F.col(WAS).getField(FILE_COLUMN)).alias(CLOSED_FILE),
               F.when(is_close, F.col(WAS).getField(ROW_COLUMN)).alias(CLOSED_ROW)]
    for spec in table_schema.fields:
        name = spec.name
        if name in (VALID_TO, IS_CURRENT):
            columns.append(F.col(quote(name)))
            continue
        opened = (F.col(quote(name)) if name in present
                  else F.lit(None).cast(spec.dataType))
        columns.append(F.when(is_close, F.col(WAS).getField(name)).otherwise(opened)
                       .alias(name))
    return source.select(*columns)


@dataclass(frozen=True)
class HistoryCommit:
    """What :func:`commit_versions` did."""

    #: False: the table already held the checkpoint's ``txn`` version.
    made: bool
    version: int | None = None
    bytes: int = 0
    held: int | None = None


def commit_versions(folder: TableFolder, source: DataFrame, *, table_schema: StructType,
                    live: LiveFiles, app_id: str, txn_version: int,
                    tag: Callable[[int], str], files: ParquetFiles, action: str,
                    checkpoint_interval: int) -> HistoryCommit | None:
    """Write ``source``'s versions (``merge_rows`` of the table's rows at ``live.version``
    with their places, ``_live_rows.py``) and commit them as the version after it.

    None when another writer took that version first: nothing of this call is in the
    table (its files stay unreferenced), and the caller reads the table again.
    ``tag(bytes)`` is the commit's ``userMetadata``.
    """
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

    read_version = live.version
    held = live.transactions.get(app_id)
    if held is not None and held >= txn_version:
        return HistoryCommit(made=False, held=held)
    schema = to_arrow_schema(table_schema, timezone="UTC")
    # As many files as the cores write at once, not one per shuffle partition of the rule's
    # windows: tiny files are slow to write (each a task of its own) and slower to read.
    cores = source.sparkSession.sparkContext.defaultParallelism
    rows = new_rows(source, table_schema, action=action).coalesce(max(1, cores))
    written: list[WrittenFile] = []
    closing: dict[str, list[int]] = {}
    # One job writes the new rows and gathers the closed versions' places (a second
    # job reading the rule's rows again only for these cost about a tenth of the write).
    for row in rows.mapInArrow(_writing_and_placing(files, schema),
                               from_arrow_schema(_OUTPUT)).collect():
        if row[CLOSED_FILE] is not None:
            closing.setdefault(row[CLOSED_FILE], []).extend(row[CLOSED_ROW])
        else:
            written.append(WrittenFile(**{f.name: row[f.name] for f in FILE_SCHEMA}))
    now_ms = int(time.time() * 1000)
    touched = _vectors(folder, live, closing, now_ms)
    size = sum(f.size for f in written)
    closed = sum(len(places) for places in closing.values())
    info = {"timestamp": now_ms, "operation": "MERGE",
            "operationParameters": {"predicate": json.dumps(["history: close and open "
                                                             "versions"])},
            "readVersion": read_version, "isolationLevel": "Serializable",
            "isBlindAppend": False,
            "operationMetrics": {"numTargetRowsInserted": str(sum(f.rows for f in written)
                                                              - closed),
                                 "numTargetRowsUpdated": str(closed),
                                 "numTargetRowsCopied": "0", "numTargetFilesRemoved": "0",
                                 "numTargetFilesAdded": str(len(written)),
                                 "numTargetBytesAdded": str(size),
                                 **_vector_counts(touched)},
            "engineInfo": f"{ENGINE_INFO} (deletion vectors)", "txnId": str(uuid.uuid4()),
            "userMetadata": tag(size)}
    actions: list[dict[str, Any]] = [
        {"commitInfo": info},
        {"txn": {"appId": app_id, "version": txn_version, "lastUpdated": now_ms}},
        *({"add": {"path": f.path, "partitionValues": {}, "size": f.size,
                   "modificationTime": f.modified_ms or now_ms, "dataChange": True,
                   "stats": f.stats}} for f in written),
        *touched]
    text = "".join(json.dumps(a, separators=(",", ":")) + "\n" for a in actions)
    version = read_version + 1
    if not create_text(folder, commit_file(version), text):
        return None
    if version % checkpoint_interval == 0:
        _checkpoint(folder)
    return HistoryCommit(made=True, version=version, bytes=size)


def _writing_and_placing(files: ParquetFiles, schema: pa.Schema) -> ArrowTask:
    """The ``mapInArrow`` task: the rows go into ``files`` (in ``schema``), a row of
    :data:`_OUTPUT` comes out per file written, then one per stored file holding versions
    this task's rows close, with their positions."""
    import pyarrow.compute as pc

    from headwater.expectations._split import typed_as

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        places: dict[str, list[pa.Array]] = {}

        def gathering() -> Iterator[pa.RecordBatch]:
            for batch in batches:
                closed = batch.filter(pc.is_valid(batch.column(CLOSED_FILE)))
                if closed.num_rows:
                    table = pa.Table.from_batches([closed]).group_by(CLOSED_FILE).aggregate(
                        [(CLOSED_ROW, "list")])
                    lists = table.column(f"{CLOSED_ROW}_list").combine_chunks()
                    for name, rows in zip(table.column(CLOSED_FILE).to_pylist(), lists,
                                          strict=True):
                        places.setdefault(name, []).append(rows.values)
                yield batch

        for written in files.write(typed_as(schema, gathering())):
            yield pa.RecordBatch.from_arrays(
                [*written.columns, pa.nulls(written.num_rows, pa.string()),
                 pa.nulls(written.num_rows, pa.list_(pa.int64()))], schema=_OUTPUT)
        if places:
            per_file = [pa.concat_arrays(parts) for parts in places.values()]
            offsets = pa.array([0, *itertools.accumulate(len(p) for p in per_file)], pa.int32())
            yield pa.RecordBatch.from_arrays(
                [*(pa.nulls(len(places), f.type) for f in FILE_SCHEMA),
                 pa.array(list(places), pa.string()),
                 pa.ListArray.from_arrays(offsets, pa.concat_arrays(per_file))],
                schema=_OUTPUT)

    return run


def _vectors(folder: TableFolder, live: LiveFiles, closing: Mapping[str, Sequence[int]],
             now_ms: int) -> list[dict[str, Any]]:
    """The ``remove`` and ``add`` actions that put each touched file's new vector (its
    old one's rows and ``closing``'s) on it; the vectors written to one new file."""
    from pyroaring import BitMap

    touched = []
    for location, positions in closing.items():
        add = live.by_location(location)
        rows = BitMap(positions)
        old = add.get("deletionVector")
        if old is not None:
            before = _deletion_vectors.read(folder, _deletion_vectors.Descriptor.of(old))
            if before & rows or len(rows) != len(positions):
                raise DestinationError(f"closing versions in {add['path']}: a row to close "
                                       "is deleted already or closed twice; the table was "
                                       "changed under the read")
            rows |= before
        elif len(rows) != len(positions):
            raise DestinationError(f"closing versions in {add['path']}: a row closed twice")
        touched.append((add, rows))
    if not touched:
        return []
    descriptors = _deletion_vectors.write(folder, [rows for _, rows in touched])
    actions: list[dict[str, Any]] = []
    for (add, _), descriptor in zip(touched, descriptors, strict=True):
        actions.append({"remove": _removal(add, now_ms)})
        actions.append({"add": {**add, "dataChange": True, "stats": _loose(add.get("stats")),
                                "deletionVector": descriptor.to_json()}})
    return actions


def _vector_counts(actions: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Spark's MERGE metrics of vectors: put on files that had none, and replaced."""
    removed = [a["remove"] for a in actions if "remove" in a]
    updated = sum(1 for r in removed if r.get("deletionVector"))
    return {"numTargetDeletionVectorsAdded": str(len(removed) - updated),
            "numTargetDeletionVectorsUpdated": str(updated)}


def _removal(add: Mapping[str, Any], now_ms: int) -> dict[str, Any]:
    """The ``remove`` of the logical file ``add`` is: its path and its vector."""
    removal = {"path": add["path"], "deletionTimestamp": now_ms, "dataChange": True,
               "extendedFileMetadata": True, "partitionValues": add.get("partitionValues", {}),
               "size": add["size"]}
    for carried in ("deletionVector", "tags", "baseRowId", "defaultRowCommitVersion"):
        if add.get(carried) is not None:
            removal[carried] = add[carried]
    return removal


def _loose(stats: str | None) -> str | None:
    """A file's statistics once some of its rows are deleted: the same, but its bounds no
    longer tight (as Spark's MERGE and DELETE mark them)."""
    if not stats:
        return stats
    parsed = json.loads(stats)
    parsed["tightBounds"] = False
    return json.dumps(parsed, separators=(",", ":"))


def _checkpoint(folder: TableFolder) -> None:
    """The log's checkpoint at the version just committed, by delta-rs (which keeps each
    file's deletion vector); a failure leaves readers replaying more JSON, nothing worse."""
    from deltalake import DeltaTable

    try:
        DeltaTable(folder.uri, storage_options=folder.storage_options()).create_checkpoint()
    except Exception:
        log.warning("checkpointing the Delta log of %s failed (the commit stands)",
                    folder.uri, exc_info=True)


__all__ = ["ENGINE_INFO", "HistoryCommit", "commit_versions", "history_refusal", "new_rows"]
