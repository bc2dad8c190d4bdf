"""Apache Iceberg destination: one table per stream, one snapshot per checkpoint.

Guarantee: exactly once.  Spark 4.2 has no Iceberg Spark runtime, so Spark never
touches the tables: the tasks write each checkpoint's Parquet files into the
table's ``data`` folder (the Delta destination's writer, ``ParquetFiles``), and
the driver adds them through PyIceberg in one snapshot whose summary carries the
checkpoint's marker (``_commit.py``, ``_markers.py``).  A resumed attempt finds
a landed checkpoint by that marker and does not write it again.

What this first step does, and refuses (before the table changes):

* ``append`` (full refresh or incremental): one ``append`` snapshot per checkpoint;
* ``overwrite`` of a run that fits one checkpoint: one ``overwrite`` snapshot that
  replaces every data file of the table with the checkpoint's;
* ``overwrite`` of several checkpoints: each is staged as a snapshot on the run's
  own branch (readers of ``main`` never see it), and one ``overwrite`` snapshot on
  ``main`` publishes them all and drops the branch (``_staging.py`` says why a
  branch);
* ``append_dedup``: each checkpoint MERGEd on the primary key by Delta's rule
  (latest cursor, then its ties), copy-on-write: the files holding rows it
  replaces are rewritten, in one ``overwrite`` snapshot (``_merge.py``); one
  commit lane per stream, as Delta's;
* ``headwater replay``: the replayed run's rows replaced by the re-read ones in
  one snapshot (``replace_run``; a dedup table MERGEs them), and ``backfill``;
  ``state realign``'s row counts and deletes by run (``_rewrite.py``);
* refused with a :class:`~headwater.errors.ConfigError` naming the stream:
  Spark Connect (the tasks must share the driver's filesystem).  Rewrites refuse
  a table holding delete files (another engine's).

A warehouse on S3 (``s3a://bucket/prefix``): the executors upload the files
straight to the table's ``data`` prefix (pyarrow's S3 filesystem) and the
driver commits them through PyIceberg's S3 FileIO, both reaching the bucket
with the connection's ``spark.hadoop.fs.s3a.*`` settings (the Delta
destination's ``S3Access``), so the store is configured once.  Only catalogs
whose commit is a compare-and-swap of the metadata pointer (``sql``, ``rest``)
are taken there (``_config.object_store`` says why not ``hadoop``).  Every mode
runs there: the copy-on-write rewrites (``append_dedup``, ``replay`` and
``backfill``, rows handed to the driver, ``state realign``'s counts and deletes)
read and write the table's files through the same pyarrow filesystem as the
tasks (``_rewrite.locate``), with the same markers, retries and clean-up as in a
local warehouse.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from headwater._events import commit_landed
from headwater.config import register_secrets
from headwater.destinations._base import (
    CommitMarker,
    CommitResult,
    Destination,
    DestinationCapabilities,
    PublishMarker,
    tagged_counts,
    tagged_partition_states,
)
from headwater.destinations._dataset import without_credentials
from headwater.destinations._deletes import deleted_column
from headwater.destinations._error_line import error_line
from headwater.destinations._history_rule import HISTORY_FIELDS
from headwater.destinations._table_files._parquet import ParquetFiles, WrittenFile
from headwater.destinations._table_files._s3_check import check_s3
from headwater.destinations._table_files._store import S3Access, TableFolder
from headwater.destinations._uncommitted import run_file_tag
from headwater.destinations.iceberg import (
    _abort,
    _catalog,
    _commit,
    _config,
    _history,
    _layout,
    _markers,
    _merge,
    _properties,
    _rewrite,
    _schema,
    _staging,
)
from headwater.errors import (
    AuthenticationError,
    CommitOutcomeUnknownError,
    ConfigError,
    DestinationError,
    HeadwaterError,
    StoreBehindTableError,
)
from headwater.sync_modes import DestinationSyncMode
from headwater.table_schema import unwritten_columns

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table
    from pyspark.sql import DataFrame, SparkSession

    from headwater.plan import CheckpointPlan, StreamPlan

log = logging.getLogger(__name__)

#: ``CommitResult.writer``: files the tasks wrote, added by PyIceberg on the driver.
WRITER_TASKS = "tasks+pyiceberg"
_WRITER_REASON = ("no Iceberg Spark runtime exists for Spark 4.2: the tasks write Parquet, "
                  "PyIceberg commits it")
_EARLIER_ATTEMPT = "committed by an earlier attempt (found in the table's snapshots)"
_REWRITE_REASON = ("copy-on-write: Spark read the table's files, the tasks rewrote those "
                   "holding replaced rows, PyIceberg committed")
#: The snapshot summary of ``delete_runs``: the runs whose rows it removed.
_DELETED_RUNS_KEY = "headwater.deleted_runs"

#: Commits retried when another writer committed to the table meanwhile.
_COMMIT_TRIES = 5


class IcebergDestination(Destination):
    type_name = "iceberg"
    guarantee = "exactly-once"
    capabilities = DestinationCapabilities(
        # Commits of one table are serialised in this process (a lock), so lanes may
        # run their Spark jobs side by side and each commit still sees the newest table.
        # A merge rewrites the files the previous one wrote: one lane, as Delta's.
        sync_modes=("overwrite", "append", "append_dedup", "history"),
        max_concurrent_commits={DestinationSyncMode.APPEND_DEDUP: 1,
                                DestinationSyncMode.HISTORY: 1},
        task_written_files=True,
        stages_overwrites=True,
        replaces_run_rows=True,
        commit_id="iceberg_snapshot_id",
        partition_transforms=True, clusters_tables=False,  # _layout.py
    )

    @classmethod
    def spec(cls) -> dict[str, Any]:
        return _config.spec()

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        self.settings = _config.resolve(self.config)
        #: One catalog client per destination, used under the lock: lanes and streams
        #: commit from several threads, and a commit must see the table it replaces.
        self._lock = threading.RLock()
        self._catalog: Catalog | None = None
        #: Each stream's data folder (where its tasks write), found by ``prepare``.
        self._folders: dict[str, TableFolder] = {}
        #: The connection's ``spark.conf`` (:meth:`use_spark_conf`): a check reaches an
        #: S3 warehouse with its ``spark.hadoop.fs.s3a.*`` settings, starting no Spark.
        self._spark_conf: dict[str, str] = {}
        #: How this process and the tasks reach an S3 warehouse (made on first use).
        self._s3: S3Access | None = None
        #: Overwrites of several checkpoints: staged on a branch, then published.
        self._staging = _staging.Staging(self.load_table, self._lock)
        #: Each stream's partition fields, as its tasks split rows by them (``_layout.py``).
        self._partition_keys: dict[str, tuple[Any, ...]] = {}
        #: How each stream's tasks write its files, from the table's properties.
        self._file_settings: dict[str, _properties.FileSettings] = {}
        #: Per stream, what :meth:`unwritten_columns` says (found by :meth:`prepare`).
        self._unwritten: dict[str, list[str]] = {}

    def table_location(self, stream: str) -> str:
        return self.settings.identifier(stream)

    def dataset_namespace(self) -> str:
        """The warehouse (without credentials); its tables are named by identifier."""
        return without_credentials(self.settings.object_store or self.settings.warehouse_folder)

    def abort(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
              marker: CommitMarker) -> None:
        """Remove the files the failed checkpoint's tasks wrote and no snapshot references."""
        folder = self._folders.get(plan.stream.name)
        local = None if folder is None or not folder.is_local else Path(folder.local_path())
        table = None if local is None else self.load_table(plan.stream.name)
        if local is not None and table is not None:
            _abort.drop_unreferenced_files(table, local, marker.run_id)

    def catalog(self) -> Catalog:
        """The catalog client (made on first use)."""
        with self._lock:
            if self._catalog is None:
                self._catalog = _catalog.load(self.settings, self._store_access())
            return self._catalog

    def use_spark_conf(self, conf: Mapping[str, str]) -> None:
        self._spark_conf = dict(conf)

    def _store_access(self) -> S3Access | None:
        """How to reach the warehouse's S3 bucket (None: a local warehouse).

        From the S3A settings Spark has for the bucket: the connection's
        ``spark.hadoop.fs.s3a.*`` when :meth:`use_spark_conf` gave them (a check,
        which starts no Spark: a session this process runs for something else is
        not the connection's), else the running session's Hadoop configuration
        (a sync).  Their secrets are masked from here on.  Credentials only S3A
        can get (an assumed role, a custom provider) are refused: no Spark writer
        stands behind this destination.
        """
        bucket = self.settings.bucket
        if bucket is None:
            return None
        with self._lock:
            if self._s3 is None:
                conf = self._spark_conf
                get = (_session_hadoop_setting() if not conf else None) or (
                    lambda key: conf.get(f"spark.hadoop.{key}"))
                untranslated = S3Access.untranslated_providers(get, bucket)
                if untranslated:
                    raise ConfigError(
                        f"fs.s3a.aws.credentials.provider names {', '.join(untranslated)}, "
                        "which only Spark's S3A follows: the iceberg destination's tasks and "
                        "PyIceberg reach the bucket with keys in fs.s3a.* or the default AWS "
                        "credential chain", field="spark.conf")
                access = S3Access.from_hadoop(get, bucket)
                register_secrets(access.secrets)
                self._s3 = access
            return self._s3

    def load_table(self, stream: str) -> Table | None:
        """The stream's table as it is now, or None when it does not exist yet."""
        with self._lock:
            return _catalog.load_table(self.catalog(), self.table_location(stream))

    def check(self) -> None:
        """The catalog is reachable and writable (a scratch table is created and dropped).

        A warehouse on S3 is probed first (a put and a delete under its prefix,
        the Delta destination's ``check_s3``), so refused credentials are named
        as an authentication failure, with no key shown.
        """
        access = self._store_access()
        if access is not None and self.settings.object_store is not None:
            check_s3(self.settings.object_store, access, conditional_writes=False)
        try:
            _catalog.check(self.settings, access)
        except HeadwaterError:
            raise
        except Exception as exc:
            where = (self.settings.catalog_properties.get("uri")  # a hadoop catalog: none
                     or self.settings.catalog_properties["warehouse"])
            raise DestinationError(
                f"the Iceberg {self.settings.catalog_type} catalog at {where} is not usable: "
                f"{error_line(exc)}") from exc

    def check_tables(self, streams: Mapping[str, pa.Schema]) -> None:
        for stream, data_schema in streams.items():
            table = self.load_table(stream)
            if table is not None:
                _schema.refuse_misfits(table, data_schema, self.table_location(stream), stream)

    def table_columns(self, stream: str, spark: SparkSession | None = None) -> pa.Schema | None:
        """The table's columns as its catalog describes them (PyIceberg: no Spark)."""
        table = self.load_table(stream)
        return None if table is None else _schema.columns_of(table)

    @classmethod
    def table_property_refusal(cls, properties: Mapping[str, str]) -> str | None:
        return _properties.refusal(properties)

    # ----------------------------------------------------------------- preparing

    def unwritten_columns(self, stream: str) -> list[str]:
        return list(self._unwritten.get(stream, ()))

    def prepare(self, spark: SparkSession, plan: StreamPlan, data_schema: pa.Schema) -> pa.Schema:
        _refuse_unsupported(spark, plan)
        identifier = self.table_location(plan.stream.name)
        try:
            with self._lock:
                catalog = self.catalog()
                _catalog.ensure_namespace(catalog, self.settings.namespace)
                table = _catalog.load_table(catalog, identifier)
                self._unwritten[plan.stream.name] = []
                stored = _stored_schema(plan, data_schema)
                if table is None:  # laid out as the stream asks (_layout.py)
                    table = _layout.create_table(catalog, identifier,
                                                 _schema.table_schema(stored), plan,
                                                 self.settings.reaches)
                else:  # checked before the table changes: one Headwater did not create
                    _schema.refuse_misfits(table, data_schema, identifier, plan.stream.name)
                    table = _layout.apply_to_existing(_catalog.with_name_mapping(table), plan)
                    existing = [f.name for f in table.schema().fields]
                    self._unwritten[plan.stream.name] = unwritten_columns(existing, stored)
                    table = _catalog.add_columns(
                        table, _schema.new_columns(set(existing), stored))
                self._remember_layout(table, plan.stream.name)
                return _schema.writing_schema(data_schema, table.schema())
        except HeadwaterError:
            raise
        except Exception as exc:
            raise DestinationError(f"cannot prepare Iceberg table {identifier}: "
                                   f"{error_line(exc)}", stream=plan.stream.name) from exc

    def file_writer(self, spark: SparkSession, plan: StreamPlan, *,
                    run_id: str = "") -> ParquetFiles:
        folder = self._folders.get(plan.stream.name)
        if folder is None:  # prepare did not run in this process
            table = self.load_table(plan.stream.name)
            if table is None:
                raise DestinationError(f"no Iceberg table {self.table_location(plan.stream.name)}"
                                       " (prepare creates it)", stream=plan.stream.name)
            self._remember_layout(table, plan.stream.name)
            folder = self._folders[plan.stream.name]
        # One file per partition value, as the table's spec splits rows; written as the
        # table's properties ask (codec, target file size: ``_properties.py``).
        return _layout.files_writer(self._file_settings[plan.stream.name], folder,
                                    self._partition_keys.get(plan.stream.name) or (),
                                    name_tag=run_file_tag(run_id) if run_id else "")

    def _remember_layout(self, table: Table, stream: str) -> None:
        """Where and how the stream's tasks write the table's files, as the table says."""
        self._folders[stream] = self._data_folder(table, stream)
        self._partition_keys[stream] = _layout.partition_keys(table)
        self._file_settings[stream] = _properties.file_settings(table.properties)

    def _data_folder(self, table: Table, stream: str) -> TableFolder:
        """Where the stream's tasks write the table's data files (a local one created)."""
        location = table.location()
        if not self.settings.reaches(location):
            raise ConfigError(
                f"Iceberg table {'.'.join(table.name())} lives at {location}, which the tasks "
                "do not write: a local warehouse's tables must be in local folders, an S3 "
                f"warehouse's in its bucket ({self.settings.object_store})",
                stream=stream, field="destination.config.warehouse")
        access = self._store_access()
        if access is not None:
            return TableFolder.on_s3(location, access).child("data")
        folder = os.path.join(_config.local_path(location) or location, "data")
        os.makedirs(folder, exist_ok=True)
        return TableFolder(folder)

    def _folder(self, spark: SparkSession, plan: StreamPlan) -> TableFolder:
        """The stream's data folder (found by ``prepare`` or, in another process, now)."""
        found = self._folders.get(plan.stream.name)
        if found is None:
            self.file_writer(spark, plan)
            found = self._folders[plan.stream.name]
        return found

    # ----------------------------------------------------------------- commits

    def find_commit(self, spark: SparkSession, plan: StreamPlan,
                    marker: CommitMarker) -> CommitResult | None:
        with self._lock:
            table = self.load_table(plan.stream.name)
            return None if table is None else _find(table, marker)

    def commit(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
               rows: DataFrame, marker: CommitMarker) -> CommitResult:
        """A dedup table's replay (the engine hands it rows): written as files, then MERGEd.

        Anything else is refused: the tasks write the files of every other commit.
        """
        if plan.stream.destination_sync_mode not in _MERGED:
            raise DestinationError(
                "the iceberg destination commits only files its tasks wrote (classic Spark); "
                "rows handed to the driver are written only for an append_dedup or history "
                "table",
                stream=marker.stream)
        return self._merge(spark, plan, checkpoint, self._write_rows(spark, plan, rows, marker),
                           marker)

    def commit_files(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
                     files: DataFrame, marker: CommitMarker) -> CommitResult:
        """Run the tasks (they write the files), then add the files in one snapshot."""
        stream = plan.stream.name
        identifier = self.table_location(stream)
        written = _written_files(files, identifier, marker)
        folder = self._folder(spark, plan)
        if plan.stream.destination_sync_mode in _MERGED:
            return self._merge(spark, plan, checkpoint, written, marker)
        paths = [_rewrite.uri(folder, f) for f in written]
        rows = sum(f.rows for f in written)
        rejected = sum(f.rejected for f in written)
        size = sum(f.size for f in written)
        overwrite = plan.stream.destination_sync_mode is DestinationSyncMode.OVERWRITE
        summary = _markers.summary_properties(marker,
                                              marker.tag_with_counts(rows, rejected, size))
        properties = {_markers.txn_property(marker.app_id): str(marker.version)}
        what = f"commit of checkpoint {marker.checkpoint_index} to {identifier}"
        for tried in range(1, _COMMIT_TRIES + 1):
            with self._lock:
                table = self.load_table(stream)
                if table is None:
                    raise DestinationError(f"no Iceberg table {identifier}", stream=stream)
                try:
                    earlier = _find(table, marker)
                except StoreBehindTableError:  # refused before any commit: nothing will
                    _remove(folder, written)  # ever reference these files
                    raise
                if earlier is not None:  # an earlier attempt's commit: these files stay out
                    _remove(folder, written)
                    return earlier
                try:
                    snapshot_id = _commit.commit(table, _commit.data_files(table, paths),
                                                 overwrite=overwrite, summary=summary,
                                                 properties=properties)
                except Exception as exc:
                    if _is_conflict(exc) and tried < _COMMIT_TRIES:
                        log.info("%s: another writer committed first; trying again", what)
                        time.sleep(0.05 * tried)
                        continue
                    return _after_error(self, stream, marker, exc, what)
            commit_landed()
            return CommitResult(rows=rows, rejected=rejected, bytes=size, version=snapshot_id,
                                writer=WRITER_TASKS, writer_reason=_WRITER_REASON)
        raise AssertionError("unreachable")

    # ------------------------------------------- overwrites: staged, then published

    def stage(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
              rows: DataFrame, marker: CommitMarker) -> CommitResult:
        """Refused, as :meth:`commit`: only files the tasks wrote are staged."""
        return self.commit(spark, plan, checkpoint, rows, marker)

    def stage_files(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
                    files: DataFrame, marker: CommitMarker) -> CommitResult:
        """Run the tasks (they write the files), then add them to the run's staging branch."""
        stream = plan.stream.name
        written = _written_files(files, self.table_location(stream), marker)
        folder = self._folder(spark, plan)
        result = self._staging.stage(
            stream, [_rewrite.uri(folder, f) for f in written], sum(f.rows for f in written),
            sum(f.rejected for f in written), sum(f.size for f in written), marker)
        if result.already_committed:  # an earlier attempt's staging: these files stay out
            _remove(folder, written)
        return replace(result, writer=WRITER_TASKS, writer_reason=_WRITER_REASON)

    def find_staged(self, spark: SparkSession, plan: StreamPlan,
                    marker: CommitMarker) -> CommitResult | None:
        found = self._staging.find(plan.stream.name, marker)
        return None if found is None else replace(found, writer=WRITER_TASKS,
                                                  writer_reason=_EARLIER_ATTEMPT)

    def publish(self, spark: SparkSession, plan: StreamPlan,
                marker: PublishMarker) -> CommitResult:
        result = self._staging.publish(plan.stream.name, marker)
        return replace(result, writer=WRITER_TASKS, writer_reason=_WRITER_REASON)

    def clear_staging(self, spark: SparkSession, plan: StreamPlan, *, keep_run_id: str) -> None:
        self._staging.clear(plan.stream.name, keep_run_id)

    # ----------------------------------------------------- copy-on-write commits

    def _merge(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
               written: list[WrittenFile], marker: CommitMarker) -> CommitResult:
        """MERGE a checkpoint's files into the table on the primary key (``_merge.py``), or
        apply them to a history table (``_history.py``)."""
        folder = self._folder(spark, plan)
        new_files = [_rewrite.uri(folder, f) for f in written]

        stream = plan.stream
        order = [p.id for p in checkpoint.partitions]

        def compute(table: Table) -> _rewrite.Rewrite:
            if stream.destination_sync_mode is DestinationSyncMode.HISTORY:
                return _history.history(spark, table, new_files, folder=folder,
                                        stream=stream.name, keys=list(stream.primary_key),
                                        cursor=stream.cursor_field, partition_order=order,
                                        planned_at=plan.planned_at)
            hard = (deleted_column(_rewrite.arrow_schema(table).names)
                    if stream.deletes == "hard" else None)
            return _merge.merge(spark, table, new_files, folder=folder, stream=stream.name,
                                keys=list(stream.primary_key), cursor=stream.cursor_field,
                                partition_order=order, deleted=hard)

        return self._rewrite(plan.stream.name, folder, marker, compute, written, new_files,
                             f"merge of checkpoint {marker.checkpoint_index} into "
                             f"{self.table_location(plan.stream.name)}")

    def replace_run(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
                    rows: DataFrame, marker: CommitMarker, *,
                    replaced_run_id: str) -> CommitResult:
        """One snapshot: the files holding ``replaced_run_id``'s rows rewritten without them,
        plus ``rows`` (the re-read ones, carrying that run's id) written as new files.

        An overwrite table is replayed only while it holds nothing but that run's
        rows, as in the Delta destination.
        """
        from pyspark.sql import functions as F

        stream = plan.stream.name
        folder = self._folder(spark, plan)
        if plan.stream.destination_sync_mode is DestinationSyncMode.OVERWRITE:
            table = self.load_table(stream)
            current = [] if table is None else _rewrite.data_files(table, stream)
            if table is not None and _rewrite.holding(
                    spark, table, current, F.col("_hw_run_id") != replaced_run_id,
                    columns=["_hw_run_id"], store=folder.store):
                raise DestinationError(
                    f"the table {self.table_location(stream)} was overwritten by a later full "
                    f"refresh, so run {replaced_run_id}'s rows are no longer its content: "
                    "replaying it would mix two generations of the table; sync it again "
                    "instead", stream=stream)
        written = self._write_rows(spark, plan, rows, marker)
        new_files = [_rewrite.uri(folder, f) for f in written]

        def compute(table: Table) -> _rewrite.Rewrite:
            rewrite = _rewrite.without_runs(spark, table, folder, stream, [replaced_run_id])
            rewrite.adding.extend(new_files)
            return rewrite

        return self._rewrite(stream, folder, marker, compute, written, new_files,
                             f"replacing the rows of run {replaced_run_id} in "
                             f"{self.table_location(stream)}")

    def _rewrite(self, stream: str, folder: TableFolder, marker: CommitMarker,
                 compute: Callable[[Table], _rewrite.Rewrite], written: list[WrittenFile],
                 inputs: list[str], what: str) -> CommitResult:
        """Commit ``compute``'s rewrite with ``marker`` (or find it landed); ``inputs`` are
        files written for it (into ``folder``, the table's data folder), deleted once no
        snapshot can reference them."""
        rows = sum(f.rows for f in written)
        rejected = sum(f.rejected for f in written)
        summary = _markers.summary_properties(
            marker, marker.tag_with_counts(rows, rejected, sum(f.size for f in written)))
        properties = {_markers.txn_property(marker.app_id): str(marker.version)}

        def load() -> Table:
            table = self.load_table(stream)
            if table is None:
                raise DestinationError(f"no Iceberg table {self.table_location(stream)}",
                                       stream=stream)
            return table

        try:
            done = _rewrite.commit_rewrite(load, self._lock, compute, summary=summary,
                                           properties=properties,
                                           earlier=lambda t: _find(t, marker),
                                           stream=stream, what=what, store=folder.store)
        except AuthenticationError as exc:  # refused: looked up, its files kept meanwhile
            result = _after_error(self, stream, marker, exc, what)  # raises unless it landed
            return replace(result, rows=rows, rejected=rejected)
        except (HeadwaterError, StoreBehindTableError):
            _rewrite.discard(inputs, folder.store)
            raise
        except Exception as exc:
            result = _after_error(self, stream, marker, exc, what)  # raises unless it landed
            return replace(result, rows=rows, rejected=rejected)
        if done.earlier is not None:
            _rewrite.discard(inputs, folder.store)
            return done.earlier
        assert done.rewrite is not None
        _rewrite.discard([p for p in inputs if p not in done.rewrite.adding], folder.store)
        commit_landed()
        return CommitResult(rows=rows, rejected=rejected, bytes=done.added_bytes,
                            version=done.snapshot_id, writer=WRITER_TASKS,
                            writer_reason=_REWRITE_REASON)

    def _write_rows(self, spark: SparkSession, plan: StreamPlan, rows: DataFrame,
                    marker: CommitMarker) -> list[WrittenFile]:
        """Write rows the engine handed over as Parquet files in the table's data folder."""
        table = self.load_table(plan.stream.name)
        if table is None:
            raise DestinationError(f"no Iceberg table {self.table_location(plan.stream.name)}",
                                   stream=plan.stream.name)
        folder = self._folder(spark, plan)
        try:
            return _rewrite.write_files(rows, table, folder)
        except Exception as exc:
            raise DestinationError(f"writing the rows of checkpoint {marker.checkpoint_index} "
                                   f"of {table.name()} failed: {error_line(exc)}",
                                   stream=plan.stream.name) from exc

    # ----------------------------------------------------------------- realigning

    def lane_versions(self, spark: SparkSession, stream: str,
                      app_id_prefix: str) -> dict[str, int]:
        table = self.load_table(stream)
        return {} if table is None else _markers.lane_versions(table.properties, app_id_prefix)

    def read_table(self, spark: SparkSession, stream: str,
                   columns: Sequence[str] | None = None) -> DataFrame:
        """The current snapshot's rows: its data files read by Spark's tasks with pyarrow
        (``_rewrite.read_files``, the path every rewrite and count of this destination
        reads by; Spark 4.2 has no Iceberg reader), only ``columns``.  Refused for a
        table holding delete files (another engine's), whose rows the data files alone
        do not give."""
        from headwater.destinations._read_frames import present

        table = self.load_table(stream)
        if table is None:
            raise DestinationError(f"Iceberg table {self.table_location(stream)} does not "
                                   "exist yet", stream=stream)
        paths = [f.file_path for f in _rewrite.data_files(table, stream)]
        names = [f.name for f in table.schema().fields]  # top-level only
        return _rewrite.read_files(spark, table, paths, store=self._store_access(),
                                   columns=present(names, columns))

    def run_row_counts(self, spark: SparkSession, stream: str) -> dict[str, int]:
        """Rows by ``_hw_run_id``, counted by Spark over the table's current data files."""
        table = self.load_table(stream)
        if table is None:
            return {}
        paths = [f.file_path for f in _rewrite.data_files(table, stream)]
        counted = _rewrite.read_files(spark, table, paths, store=self._store_access(),
                                      columns=["_hw_run_id"]).groupBy("_hw_run_id").count()
        return {str(r["_hw_run_id"]): int(r["count"]) for r in counted.collect()}

    def delete_runs(self, spark: SparkSession, stream: str, run_ids: list[str]) -> int:
        """One ``overwrite`` snapshot: the files holding those runs' rows rewritten without them."""
        return self._delete_runs(spark, stream, run_ids, None)

    def delete_checkpoints(self, spark: SparkSession, stream: str, run_id: str,
                           checkpoints: Sequence[int]) -> int:
        """:meth:`delete_runs`, of the rows ``run_id`` wrote in ``checkpoints`` only."""
        return self._delete_runs(spark, stream, [run_id], list(checkpoints)) \
            if checkpoints else 0

    def _delete_runs(self, spark: SparkSession, stream: str, run_ids: list[str],
                     checkpoints: list[int] | None) -> int:
        table = self.load_table(stream)
        if table is None or not run_ids:
            return 0
        folder = self._data_folder(table, stream)
        which = "" if checkpoints is None else f" (checkpoints {checkpoints})"
        done: _rewrite.Committed[bool] = _rewrite.commit_rewrite(
            lambda: self.load_table(stream) or table, self._lock,
            lambda t: _rewrite.without_runs(spark, t, folder, stream, run_ids, checkpoints),
            summary={_DELETED_RUNS_KEY: ",".join(run_ids) + which}, properties={},
            earlier=lambda t: None, stream=stream, commit_empty=False, store=folder.store,
            what=f"deleting the rows of runs {', '.join(run_ids)}{which} from {table.name()}")
        return done.rewrite.figures.get("deleted", 0) if done.rewrite else 0


#: The modes whose checkpoints are rewrites of the table's files, not appends.
_MERGED = (DestinationSyncMode.APPEND_DEDUP, DestinationSyncMode.HISTORY)


def _stored_schema(plan: StreamPlan, data_schema: pa.Schema) -> pa.Schema:
    """The stream's columns as its table stores them: a history table's validity columns
    after them (``_history_rule.py``), which the tasks never write."""
    if plan.stream.destination_sync_mode is DestinationSyncMode.HISTORY:
        return pa.schema([*data_schema, *HISTORY_FIELDS])
    return data_schema


def _refuse_unsupported(spark: SparkSession, plan: StreamPlan) -> None:
    """Refuse what this step cannot do correctly, before anything changes (a ConfigError)."""
    name = plan.stream.name
    problem = None
    try:
        spark.sparkContext  # noqa: B018 - raises under Spark Connect
    except Exception:
        problem = ("the iceberg destination needs classic Spark: its tasks write the "
                   "table's files into a folder the driver shares, which Spark Connect's "
                   "driver does not")
    if problem is not None:
        raise ConfigError(f"stream {name!r} ({plan.stream.mode_label}): {problem}",
                          stream=name, field="destination.type")


def _session_hadoop_setting() -> Callable[[str], str | None] | None:
    """The running Spark session's Hadoop settings (``get``), or None when none runs."""
    import sys

    if "pyspark" not in sys.modules:  # nothing started a session in this process
        return None
    from pyspark import SparkContext

    context = SparkContext._active_spark_context
    if context is None:
        return None
    get: Callable[[str], str | None] = context._jsc.hadoopConfiguration().get
    return get


def _find(table: Table, marker: CommitMarker) -> CommitResult | None:
    """The commit of ``marker`` the table holds (None: none), or raise: the store is behind.

    By the snapshot that carries its tag; else, when the lane's version property
    says the checkpoint is in (its snapshot expired), as committed without figures
    on a resumed attempt (the engine then takes the figures the store recorded),
    and on a first attempt as a metadata store that went back in time.
    """
    snapshots = _commit.snapshots_newest_first(table)
    found = _markers.find_tagged(snapshots, marker)
    if found is not None:
        counts = tagged_counts(found.tag)
        return CommitResult(rows=counts.get("rows", 0), rejected=counts.get("rejected", 0),
                            bytes=counts.get("bytes", 0), version=found.snapshot_id,
                            already_committed=True,
                            partition_states=tagged_partition_states(found.tag),
                            writer=WRITER_TASKS, writer_reason=_EARLIER_ATTEMPT)
    held = _markers.held_version(table.properties, marker.app_id)
    if held is None or held < marker.version:
        return None
    owner_snapshot = _markers.find_tagged(
        snapshots, replace(marker, checkpoint_index=held), any_run=True)
    owner = _markers.run_of(owner_snapshot.tag) if owner_snapshot else None
    if marker.attempt > 1 and owner in (None, marker.run_id):
        log.warning("checkpoint %s of %s: table %s holds version %s of %s but no snapshot of "
                    "this checkpoint (expired?); counted as committed by an earlier attempt",
                    marker.checkpoint_index, marker.stream, table.name(), held, marker.app_id)
        return CommitResult(rows=0, rejected=0, bytes=0, version=None, already_committed=True,
                            writer=WRITER_TASKS, writer_reason=_EARLIER_ATTEMPT)
    by = f", committed by run {owner}" if owner not in (None, marker.run_id) else ""
    raise StoreBehindTableError(
        f"the metadata store is behind the table: checkpoint {marker.checkpoint_index} of run "
        f"{marker.run_id} got version {marker.version} of {marker.app_id}, and the Iceberg "
        f"table {'.'.join(table.name())} already holds version {held} of it{by}; nothing was "
        "committed. The store was restored from an older copy (or lost writes)",
        stream=marker.stream)


def _after_error(destination: IcebergDestination, stream: str, marker: CommitMarker,
                 exc: BaseException, what: str) -> CommitResult:
    """A commit that raised: a success if its snapshot landed nonetheless, else the error.

    A refusal of the catalog (an AuthenticationError: ``_rest.py``) stays one, so the
    sync exits with the authentication code; it too is looked up first.  A lookup
    that raises (the table missing is an answer: None) leaves the outcome unknown:
    :class:`~headwater.errors.CommitOutcomeUnknownError` (or, refused,
    ``RefusedCommitOutcomeUnknown``), which keeps the run resumable.
    """

    def landed() -> _markers.TaggedSnapshot | None:
        table = destination.load_table(stream)
        return None if table is None else _markers.find_tagged(
            _commit.snapshots_newest_first(table), marker)

    found: _markers.TaggedSnapshot | None = None
    if isinstance(exc, AuthenticationError):
        found = _commit.refused_commit(exc, what, landed, stream=stream,
                                       checkpoint=marker.checkpoint_index)
    else:
        try:
            found = landed()
        except Exception as lookup:  # no answer: whether it landed is unknown
            raise CommitOutcomeUnknownError(
                what, error=error_line(exc), lookup=error_line(lookup), stream=stream,
                checkpoint=marker.checkpoint_index) from exc
        if found is None:
            raise DestinationError(f"{what} failed: {error_line(exc)}", stream=stream) from exc
        log.warning("%s raised after its snapshot %s landed, so it counts as committed: %s",
                    what, found.snapshot_id, error_line(exc))
    counts = tagged_counts(found.tag)
    return CommitResult(rows=counts.get("rows", 0), rejected=counts.get("rejected", 0),
                        bytes=counts.get("bytes", 0), version=found.snapshot_id,
                        writer=WRITER_TASKS,
                        writer_reason="the commit landed, then its writer raised (see the log)")


def _written_files(files: DataFrame, identifier: str, marker: CommitMarker) -> list[WrittenFile]:
    """Run a checkpoint's tasks (they write its files); the files they describe."""
    try:
        return [WrittenFile(**row.asDict()) for row in files.collect()]
    except Exception as exc:
        raise DestinationError(f"writing the files of checkpoint {marker.checkpoint_index} of "
                               f"{identifier} failed: {error_line(exc)}",
                               stream=marker.stream) from exc


def _remove(folder: TableFolder, written: list[WrittenFile]) -> None:
    """Delete files no snapshot references (their checkpoint was committed earlier)."""
    for file in written:
        with contextlib.suppress(OSError):
            folder.delete_file(file.path)


def _is_conflict(exc: BaseException) -> bool:
    from pyiceberg.exceptions import CommitFailedException

    return isinstance(exc, CommitFailedException)



__all__ = ["WRITER_TASKS", "IcebergDestination"]
