"""Delta Lake destination: one table per stream, one idempotent commit per checkpoint.

Guarantee: exactly once.  Every commit carries Delta's idempotent-write pair
``txnAppId``/``txnVersion`` (the checkpoint's lane and global index), so a
checkpoint re-executed after a crash is skipped by Delta itself; the commit
also carries a ``userMetadata`` tag that lets a resumed attempt find out, before
reading anything, that a killed attempt's commit already landed.

Sync modes:

* ``overwrite``: readers see the old rows until the whole run has landed, then
  the new ones (the previous generation stays readable by time travel).  A run
  of one checkpoint commits it with mode overwrite; a run of several stages
  each checkpoint out of readers' sight and publishes them in one overwrite
  commit once every one is staged (``_staging.py``), so a run that fails or
  stops leaves the table as it was.
* ``append``: every checkpoint appends.
* ``append_dedup``: every checkpoint is MERGEd on the primary key; the row with
  the latest cursor wins (ties: the later checkpoint, then the later partition,
  then the later record); with ``deletes: hard`` a winning CDC delete deletes the
  key's row in the same MERGE.
* ``history``: every checkpoint closes and opens its keys' versions in one MERGE
  (``_history_rule.py``, ``docs/history.md``).

Two ways to write (``writer`` in the config):

* ``auto`` (the default): on classic Spark, ``append`` and ``overwrite`` tables in a
  local folder, on S3 (and S3-compatible stores with conditional writes) or on
  Azure (``_table_files/_store.py``) are written by the tasks themselves (pyarrow,
  ``_table_files/_parquet.py``) and
  committed through delta-rs (``_delta_rs.py``), with the same ``txn`` pair and
  tag, provided the table's protocol and metadata are on the task path's
  allowlist (``_table_features.py``: no column mapping, constraints, generated
  or identity columns, invariants, partitions, or features it does not know);
  everything else goes through Spark's Delta writer.
* ``spark``: always Spark's Delta writer.

Every :class:`CommitResult` says which of the two committed it (``writer``:
:data:`WRITER_TASKS` or :data:`WRITER_SPARK`) and why (``writer_reason``).

Each table lives at ``<path>/<stream>``; with ``database`` in the config it is
also registered by name in the session's catalog on every sync (``_catalog.py``).
A stream's ``table_layout`` (partitions, liquid clustering, properties) is
applied when the table is created; an existing table gets the properties it
lacks, and a layout that differs is reported, not changed (:func:`_report_layout`).
Partitioned and clustered tables are off the task path's allowlist: Spark writes them.

This module wires the destination together; each concern has a module of its own:
``_writability.py`` (``check``, and who writes a table: the tasks or Spark),
``_commit_lookup.py`` (what landed: a checkpoint's commit found by its tag or its
lane's txn version), ``_schema_evolution.py`` (new columns, the table's types),
``_layout.py`` (partitions, clustering, properties), ``_publish.py`` (a staged
overwrite's one commit), ``_reach.py`` (the table as the driver reaches it) and
``_errors.py`` (an error in a line).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa

from headwater._events import commit_landed, emit
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
from headwater.destinations._history_rule import (
    HISTORY_FIELDS,
    HISTORY_NAMES,
    IS_CURRENT,
    VALID_FROM,
    VALID_TO,
    WAS,
)
from headwater.destinations._history_rule import changes as history_changes
from headwater.destinations._history_rule import merge_rows as history_merge_rows
from headwater.destinations._merge_rule import keys_match, latest_rows, update_when
from headwater.destinations._table_files._parquet import ParquetFiles
from headwater.destinations._table_files._store import (
    TableFolder,
)
from headwater.destinations._uncommitted import local_folder_of, run_file_tag
from headwater.destinations.delta import (
    _abort,
    _catalog,
    _commit_lookup,
    _delta_rs,
    _publish,
    _sql,
    _staging,
    _table_facts,
    _writability,
)
from headwater.destinations.delta._catalog import IDENTIFIER_PATTERN, PREFIX_PATTERN
from headwater.destinations.delta._commit_lookup import (
    WRITER_HISTORY,
    WRITER_SPARK,
    WRITER_TASKS,
)
from headwater.destinations.delta._errors import _failed
from headwater.destinations.delta._history_commit import commit_versions, history_refusal
from headwater.destinations.delta._layout import (
    _create_table,
    _properties_to_set,
    _report_layout,
)
from headwater.destinations.delta._live_files import live_files
from headwater.destinations.delta._live_rows import live_rows, with_places
from headwater.destinations.delta._reach import _driver_folder
from headwater.destinations.delta._schema_evolution import (
    _add_columns,
    _not_filled_by_delta,
    _table_types,
    nested_additions,
)
from headwater.destinations.delta._session import SPARK_NEEDS
from headwater.destinations.delta._sql import (
    is_delta_table,
    merge,
    merge_history,
)
from headwater.destinations.delta._stats import (
    STATS_META_COLUMNS,
    STATS_PROPERTY,
    listed_columns,
    stats_columns,
)
from headwater.destinations.delta._table_features import task_path_refusal
from headwater.destinations.delta._table_fit import columns_of, refuse_misfits
from headwater.destinations.delta._variant import (
    spark_schema,
    task_path_reason,
    variant_columns,
    with_variants,
)
from headwater.destinations.delta._writability import (
    STORE_NAMES,
    _Choice,
    _unreadable,
)
from headwater.errors import (
    DestinationError,
    HeadwaterError,
    StoreBehindTableError,
)
from headwater.sync_modes import DestinationSyncMode
from headwater.table_schema import (
    META_FIELDS,
    unwritten_columns,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructType

    from headwater.plan import CheckpointPlan, StreamPlan

log = logging.getLogger(__name__)

_T = TypeVar("_T")


#: MERGE takes its idempotency keys and commit tag from *session* confs, which
#: every thread of this process shares; this lock keeps one MERGE's confs from
#: leaking into another commit.  Every Spark commit without txn options of its own
#: (a MERGE, a table's creation, ALTER TABLE) holds it; writes that pass
#: ``txnAppId``/``userMetadata`` as options need not, as options win over confs.
_SESSION_CONF_LOCK = threading.Lock()
_TXN_APP_CONF = "spark.databricks.delta.write.txnAppId"
_TXN_VERSION_CONF = "spark.databricks.delta.write.txnVersion"
_USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"
_MATERIALIZE_SOURCE_CONF = "spark.databricks.delta.merge.materializeSource"


class DeltaDestination(Destination):
    type_name = "delta"
    guarantee = "exactly-once"
    capabilities = DestinationCapabilities(
        spark=SPARK_NEEDS,
        sync_modes=("overwrite", "append", "append_dedup", "history"),
        # MERGE commits of one table conflict with each other: one lane.
        max_concurrent_commits={DestinationSyncMode.APPEND_DEDUP: 1,
                                DestinationSyncMode.HISTORY: 1},
        task_written_files=True,
        stages_overwrites=True,
        replaces_run_rows=True,
        commit_id="delta_version",
    )

    @classmethod
    def spec(cls) -> dict[str, Any]:
        return {
            "$schema": "http://json-schema.org/draft-07/schema#",
            "title": "Delta Lake destination",
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "path": {
                    "type": "string",
                    "description": "Folder (or any URI Spark can write) holding one table per "
                    "stream; relative paths resolve against the working directory.",
                    "default": "lakehouse",
                },
                "writer": {
                    "type": "string",
                    "enum": ["auto", "spark"],
                    "default": "auto",
                    "description": "auto: tasks write Parquet themselves where the table is in "
                    "a local folder or on S3 and the mode is append or overwrite (several times "
                    "faster); spark: always Spark's Delta writer.",
                },
                "s3_conditional_writes": {
                    "type": "boolean",
                    "default": True,
                    "description": "Whether the S3 (or S3-compatible) store refuses a put "
                    "with If-None-Match: * of an object that exists, as AWS S3 and MinIO do. "
                    "The task path commits to S3 only through such writes; false: Spark's "
                    "Delta writer (and its LogStore) commits every table of an s3a:// path.",
                },
                "database": {
                    "type": "string",
                    "pattern": IDENTIFIER_PATTERN,
                    "description": "Also register each stream's table under this database "
                    "of the Spark session's catalog (the Hive metastore, where the session's "
                    "settings configure one), as <database>.<table_prefix><stream>; the table "
                    "stays at its path. Created if missing.",
                },
                "table_prefix": {
                    "type": "string",
                    "pattern": PREFIX_PATTERN,
                    "description": "Put before each stream's name in its registered table's "
                    "name (with database only).",
                },
            },
            "dependencies": {"table_prefix": ["database"]},
        }

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        root = str(self.config.get("path") or "lakehouse")
        if "://" not in root:
            root = str(Path(root).resolve())
        self.root = root.rstrip("/")
        #: The connection's ``spark.conf`` (:meth:`use_spark_conf`): a check of an S3
        #: path reaches it with these ``spark.hadoop.fs.s3a.*`` settings.
        self._spark_conf: dict[str, str] = {}
        #: The statistics columns ``prepare`` found or set, per table folder, for the
        #: ``file_writer`` call that follows it to take (once) instead of loading the
        #: table's log again.  Each stream's thread reads and writes only its own folder.
        self._prepared_stats_columns: dict[str, list[str]] = {}
        #: The writer ``prepare`` (or ``file_writer``) chose, per stream, for the commits
        #: to report.  Each stream's thread reads and writes only its own stream's entry.
        self._choices: dict[str, _Choice] = {}
        #: Staging tables known to exist (Spark's writer path), and the lock that lets
        #: one lane create a staging table while the others wait (two appends that
        #: both create a table conflict).
        self._staging_tables: set[str] = set()
        self._staging_lock = threading.Lock()
        #: The columns ``prepare`` found VARIANT (in the table, or to be), per stream:
        #: Spark parses their JSON text before each write.  Each stream's thread
        #: reads and writes only its own stream's entry.
        self._variants: dict[str, list[str]] = {}
        #: Whether ``prepare`` found (or made) the stream's table liquid-clustered:
        #: overwriting it takes care to keep the clustering (``_overwrite_options``).
        #: Each stream's thread reads and writes only its own stream's entry.
        self._clustered: dict[str, bool] = {}
        #: Why a history stream's checkpoints go through Spark's MERGE, not an own commit.
        self._history_refusals: dict[str, str] = {}
        #: Per stream, what :meth:`unwritten_columns` says (found by ``_prepare``).
        self._unwritten: dict[str, list[str]] = {}

    def table_location(self, stream: str) -> str:
        return f"{self.root}/{stream}"

    def dataset_namespace(self) -> str:
        """The lake's folder or URL (without credentials): the tables are its children."""
        return without_credentials(self.root)

    def abort(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
              marker: CommitMarker) -> None:
        """Remove the files the failed checkpoint's tasks wrote and no commit names."""
        folder = local_folder_of(self.table_location(plan.stream.name))
        if folder is not None:
            _abort.drop_uncommitted_files(folder, marker.run_id)

    def use_spark_conf(self, conf: Mapping[str, str]) -> None:
        self._spark_conf = dict(conf)

    def _hadoop_setting(self, key: str) -> str | None:
        """A Hadoop setting (``fs.s3a.endpoint``) as the connection's ``spark.conf`` sets it."""
        return self._spark_conf.get(f"spark.hadoop.{key}")

    def check(self) -> None:
        """The tables' folder exists or can be created, and is writable.

        For a local folder (``file://`` or a plain path): a scratch file
        (``.headwater-check-<uuid>``) is created in it and removed, and folders this
        check had to create are removed again.  For ``s3a://`` (or ``s3://``): a probe
        object is put under the path and deleted with the ``spark.hadoop.fs.s3a.*``
        settings of the connection's ``spark.conf`` (:meth:`use_spark_conf`; what they
        leave unset, the default AWS credential chain gives), and with
        ``s3_conditional_writes`` the store must refuse a second ``If-None-Match: *``
        put of it (``_table_files._s3_check``).  For ``abfss://`` and ``wasbs://`` the same with
        the ``spark.hadoop.fs.azure.*`` settings and Azure's conditional create
        (``_azure_check``).  Any other URI (``gs://``...) is reachable only
        through Spark, which a check does not start: nothing is checked
        (:meth:`check_skipped` says so).  Neither is ``database`` (registering tables
        by name needs the Spark session's catalog).
        """
        conditional = bool(self.config.get("s3_conditional_writes", True))
        _writability.check_root(self.root, self._hadoop_setting, conditional_writes=conditional)

    def check_tables(self, streams: Mapping[str, pa.Schema]) -> None:
        """Each stream's existing table, read by delta-rs (local folders, S3, Azure), must
        take the stream's rows (``_table_fit.py``); other locations are Spark's to read."""
        _writability.check_tables(streams, self.table_location, self._hadoop_setting)

    def check_skipped(self) -> str | None:
        return _writability.check_skipped(self.root, self._hadoop_setting)

    def table_columns(self, stream: str, spark: SparkSession | None = None) -> pa.Schema | None:
        """The table's columns from its log: read by delta-rs where it reaches the table
        (no Spark), else by Spark's reader."""
        location = self.table_location(stream)
        folder = _writability.readable_folder(location, self._hadoop_setting)
        try:
            state = None if folder is None else _delta_rs.table_state(folder)
            if folder is not None:
                return None if state is None else columns_of(state.schema_json)
        except Exception as exc:
            if spark is None:
                raise _failed(f"cannot read the Delta table at {location}", exc,
                              stream) from exc
        if spark is None:
            raise DestinationError(f"the Delta table at {location} is read by Spark only: its "
                                   "columns are known once a sync starts", stream=stream)
        with _SESSION_CONF_LOCK:
            if _sql.table_detail(spark, location) is None:
                return None
            return columns_of(spark.read.format("delta").load(location).schema.jsonValue())

    def table_name(self, stream: str) -> str | None:
        """``<database>.<table_prefix><stream>`` when ``database`` is set, else None."""
        database = self.config.get("database")
        if not database:
            return None
        return f"{database}.{self.config.get('table_prefix') or ''}{stream}"

    def _files_folder(self, spark: SparkSession, plan: StreamPlan) -> _Choice:
        """The local folder tasks may write this stream's files into, before the table is read.

        ``folder`` None: Spark writes, for the reason given, whatever the table.
        """
        location = self.table_location(plan.stream.name)
        return _writability.files_folder(spark, plan, location, self.config)

    def _choose(self, plan: StreamPlan, folder: TableFolder,
                state: _delta_rs.TableState | None) -> _Choice:
        """The writer of the table in ``folder`` as ``state`` describes it; remembered."""
        refusal = None if state is None else task_path_refusal(state.protocol)
        where = ("local folder" if folder.is_local or folder.store is None
                 else STORE_NAMES[folder.store.scheme])
        choice = (_Choice(folder, f"{where}, {plan.stream.destination_sync_mode}, table "
                                  f"protocol {state.protocol.versions if state else '(new)'} "
                                  "on the task path's allowlist")
                  if refusal is None else _Choice(None, refusal))
        self._choices[plan.stream.name] = choice
        return choice

    def file_writer(self, spark: SparkSession, plan: StreamPlan, *,
                    run_id: str = "") -> ParquetFiles | None:
        choice = self._choices.get(plan.stream.name)
        if choice is None:  # prepare did not run here
            choice = self._files_folder(spark, plan)
            self._choices[plan.stream.name] = choice
        folder = choice.folder
        if folder is None:
            return None
        listed = self._prepared_stats_columns.pop(folder.uri, None)
        if listed is None:  # prepare did not run here, or changed the table through Spark
            try:
                state = _delta_rs.table_state(folder)
            except Exception as exc:
                self._choices[plan.stream.name] = _unreadable(exc)
                return None
            if self._choose(plan, folder, state).folder is None:
                return None
            listed = listed_columns(state.properties.get(STATS_PROPERTY) if state else None)
        return ParquetFiles(folder=folder.uri, store=folder.store,
                            stats_columns=listed or list(STATS_META_COLUMNS),
                            name_tag=run_file_tag(run_id) if run_id else "")

    # ----------------------------------------------------------------- preparing

    def prepare(self, spark: SparkSession, plan: StreamPlan, data_schema: pa.Schema) -> pa.Schema:
        prepared = self._prepare(spark, plan, data_schema)
        self._variants[plan.stream.name] = variant_columns(prepared)
        self._register(spark, plan.stream.name)
        return prepared

    def _register(self, spark: SparkSession, stream: str) -> None:
        """Register the stream's table by name in the session's catalog (``database``).

        On every sync, once the table exists: idempotent (``_catalog.py``).
        """
        name = self.table_name(stream)
        if name is None:
            return
        location = self.table_location(stream)
        try:
            # Catalog statements only, but through Delta's catalog: should one commit
            # to the table, a MERGE's session confs must not ride along (see the lock).
            with _SESSION_CONF_LOCK:
                _catalog.register(spark, name, location)
        except ValueError as exc:
            raise DestinationError(str(exc), stream=stream) from exc
        except Exception as exc:
            raise _failed(f"cannot register the Delta table at {location} as {name}", exc,
                          stream) from exc

    def _prepare(self, spark: SparkSession, plan: StreamPlan,
                 data_schema: pa.Schema) -> pa.Schema:
        from pyspark.sql.pandas.types import from_arrow_schema
        from pyspark.sql.types import StructType

        location = self.table_location(plan.stream.name)
        layout = plan.stream.table_layout
        # Tables on the task path's allowlist are never clustered (``clustering`` is off it).
        self._clustered[plan.stream.name] = False
        history = plan.stream.destination_sync_mode is DestinationSyncMode.HISTORY
        wanted = pa.schema(META_FIELDS + list(data_schema) + (HISTORY_FIELDS if history else []))
        self._unwritten[plan.stream.name] = []
        self._choices[plan.stream.name] = choice = self._files_folder(spark, plan)
        folder = choice.folder
        variants = variant_columns(data_schema)
        try:
            state = None
            if folder is not None:
                self._prepared_stats_columns.pop(folder.uri, None)
                try:
                    state = _delta_rs.table_state(folder)
                except Exception as exc:  # a log delta-rs cannot read is Spark's to write
                    self._choices[plan.stream.name] = _unreadable(exc)
                    folder = None
            # Spark writes it: its log read by delta-rs where delta-rs reaches it.
            absent = False
            if choice.folder is None:
                absent, state = _logged_state(spark, location)
            if folder is not None and state is None and variants:
                # Only Spark's writer writes VARIANT: it creates the table (below).
                self._choices[plan.stream.name] = _Choice(None, task_path_reason(variants))
                folder = None
            if folder is not None and state is None and layout.is_default:
                # No Spark job and no Delta-Spark code for a table the tasks will
                # write: in a new JVM that alone was seconds of class loading.
                listed = stats_columns(from_arrow_schema(wanted))
                created = _delta_rs.create_table(folder, wanted, {STATS_PROPERTY: listed})
                # Read from the table, not assumed: the one now in the folder must qualify.
                if self._choose(plan, folder, created).folder is not None:
                    self._prepared_stats_columns[folder.uri] = listed_columns(listed)
                return data_schema
            # A table the stream lays out (partitions, clustering, properties) is created
            # by Spark (below), which sets the protocol features they need; who writes it
            # then is decided from the table as created (``file_writer`` reads it again).
            # A table off the task path's allowlist is evolved by Spark (below): on a
            # column-mapped table only Spark's ALTER TABLE gives new columns physical names.
            if state is not None:  # before the table changes: one Headwater did not create
                refuse_misfits(StructType.fromJson(state.schema_json), data_schema, location,
                               plan.stream.name)
            if (folder is not None and state is not None
                    and self._choose(plan, folder, state).folder is not None):
                existing = {f.name: f for f in StructType.fromJson(state.schema_json)}
                self._unwritten[plan.stream.name] = unwritten_columns(
                    _not_filled_by_delta(existing.values()), data_schema)
                if all(f.name in existing for f in wanted) and not nested_additions(
                        from_arrow_schema(wanted), existing) and not _properties_to_set(
                        layout, state.properties):
                    # On the allowlist, so neither partitioned nor clustered.
                    _report_layout(plan, location, _sql.TableDetail(
                        state.properties, tuple(state.protocol.partition_columns)))
                    self._prepared_stats_columns[folder.uri] = listed_columns(
                        state.properties.get(STATS_PROPERTY))
                    return _table_types(data_schema, existing)
            # Spark commits these without txn options of their own: a MERGE's session
            # confs, set meanwhile by another stream, would ride along (see the lock).
            with _SESSION_CONF_LOCK:
                # From the log where delta-rs read it (no Spark job), else from Spark.
                logged = None if state is None else _delta_rs.table_detail(state)
                detail = logged or (None if absent else _sql.table_detail(spark, location))
                if detail is None:
                    _create_table(spark, location, spark_schema(wanted), layout,
                                  HISTORY_TABLE_PROPERTIES if history else None)
                    self._clustered[plan.stream.name] = bool(layout.cluster_by)
                    return data_schema
                if logged is not None and state is not None:
                    # The log's columns: Spark's reader gives the same names and types.
                    existing = {f.name: f for f in StructType.fromJson(state.schema_json)}
                else:
                    existing = {f.name: f
                                for f in spark.read.format("delta").load(location).schema}
                if state is None:  # not read by delta-rs above
                    refuse_misfits(existing.values(), data_schema, location, plan.stream.name)
                _report_layout(plan, location, detail)
                self._clustered[plan.stream.name] = bool(detail.clustering_columns)
                properties = dict(detail.properties)
                # The log's schema, where delta-rs read it: Spark's drops the generation
                # expressions and identity settings that say which columns Delta fills.
                fields = (StructType.fromJson(state.schema_json).fields if state is not None
                          else existing.values())
                self._unwritten[plan.stream.name] = [
                    name for name in unwritten_columns(_not_filled_by_delta(fields), data_schema)
                    if not (history and name in HISTORY_NAMES)]
                existing = _add_columns(spark, location, spark_schema(wanted), existing,
                                        properties, layout)
                return _table_types(data_schema, existing)
        except HeadwaterError:
            raise
        except Exception as exc:
            raise _failed(f"cannot prepare Delta table at {location}", exc,
                          plan.stream.name) from exc

    def unwritten_columns(self, stream: str) -> list[str]:
        return list(self._unwritten.get(stream, ()))

    # ----------------------------------------------------------------- commits

    def find_commit(self, spark: SparkSession, plan: StreamPlan,
                    marker: CommitMarker) -> CommitResult | None:
        location = self.table_location(plan.stream.name)
        if _driver_folder(spark, location) is None and not is_delta_table(spark, location):
            return None
        # Where the driver shares the folder, delta-rs loads the table once, for its
        # history, and a missing table has none.
        found = _commit_lookup._tagged_commit(spark, location, marker)
        if found is not None:
            return _commit_lookup._landed(found, already_committed=True)
        # The history may no longer list it (the log was cleaned up); the lane's txn
        # version stays, and a lane commits its checkpoints in index order.
        held = _commit_lookup._lane_version(spark, location, marker.app_id)
        if held is None or held < marker.version:
            return None
        return _commit_lookup._skipped(spark, location, marker, held)

    def commit_files(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
                     files: DataFrame, marker: CommitMarker) -> CommitResult:
        """Run the tasks (they write the files), then add the files in one delta-rs commit."""
        location = self.table_location(plan.stream.name)
        folder = _driver_folder(spark, location)
        if folder is None:
            raise DestinationError(f"{location} is not a folder the driver reaches",
                                   stream=marker.stream)
        first_of_run = checkpoint.index == plan.checkpoints[0].index
        overwrite = plan.stream.destination_sync_mode is DestinationSyncMode.OVERWRITE
        mode = "overwrite" if overwrite and first_of_run else "append"
        written = _written_files(files, location, marker)
        rows = sum(f.rows for f in written)
        rejected = sum(f.rejected for f in written)
        size = sum(f.size for f in written)
        what = f"commit of checkpoint {marker.checkpoint_index} to {location}"
        try:
            committed = _delta_rs.commit_files(folder, written, mode=mode, app_id=marker.app_id,
                                               version=marker.version,
                                               tag=marker.tag_with_counts(rows, rejected, size))
            if committed.made:
                commit_landed()
        except Exception as exc:
            # delta-rs raises when its post-commit work (the log checkpoint) fails
            # after the commit file is durable: whether it landed is in the table.
            landed = _commit_lookup._after_error(spark, location, marker, exc, what)
            return replace(landed, rows=rows, rejected=rejected, bytes=size)
        if committed.made:
            return CommitResult(rows=rows, rejected=rejected, bytes=size,
                                version=committed.version, writer=WRITER_TASKS,
                                writer_reason=self._tasks_reason(plan))
        # The table holds this txn version already, and the files just written stay
        # out of it.  An earlier attempt's commit is in the history, with its tag.
        found = _commit_lookup._tagged_commit(spark, location, marker)
        if found is None:
            return _commit_lookup._skipped(spark, location, marker, committed.held)
        return CommitResult(rows=rows, rejected=rejected, bytes=size, version=found[0],
                            already_committed=True,
                            partition_states=tagged_partition_states(found[2]),
                            writer=_commit_lookup._writer_of(found[3]),
                            writer_reason=_commit_lookup._EARLIER_ATTEMPT)

    def commit(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
               rows: DataFrame, marker: CommitMarker) -> CommitResult:
        location = self.table_location(plan.stream.name)
        mode = plan.stream.destination_sync_mode
        first_of_run = checkpoint.index == plan.checkpoints[0].index
        rows = with_variants(rows, self._variants.get(plan.stream.name, ()))
        try:
            if marker.attempt > 1:
                # Delta skips a write whose txn version the table holds, and then no
                # job runs for the write's observation: waiting for its counts would
                # never end.  A resumed attempt's earlier commit is taken from the
                # history instead (the engine looks first too; this is the table's own
                # guard, whatever the caller looked up).
                earlier = self.find_commit(spark, plan, marker)
                if earlier is not None:
                    return earlier
            if mode is DestinationSyncMode.APPEND_DEDUP:
                merged = self._merge(spark, plan, rows, marker, location,
                                     [p.id for p in checkpoint.partitions])
                counts: Callable[[], Mapping[str, Any]] = lambda: merged  # noqa: E731
            elif mode is DestinationSyncMode.HISTORY:
                counts, own = self._history(spark, plan, rows, marker, location,
                                            [p.id for p in checkpoint.partitions])
                if own is not None:
                    return own
            else:
                write_mode = ("overwrite" if mode is DestinationSyncMode.OVERWRITE and first_of_run
                              else "append")
                options = self._overwrite_options(plan) if write_mode == "overwrite" else {}
                counts = _write(rows, marker, location, write_mode, **options)
            result = _commit_lookup._committed(spark, location, marker, counts)
            if result.writer is None and not result.already_committed:
                result = replace(result, writer=WRITER_SPARK,
                                 writer_reason=self._spark_reason(plan))
            return result
        except StoreBehindTableError:
            raise
        except Exception as exc:
            return _commit_lookup._after_error(spark, location, marker, exc,
                                f"commit of checkpoint {marker.checkpoint_index} to {location}")

    def _overwrite_options(self, plan: StreamPlan) -> dict[str, str]:
        """Options of a Spark write replacing all of the stream's table's rows.

        A plain ``overwrite`` of a liquid-clustered table drops its clustering
        (Delta 4.4 resets the clustering columns of a table a write in mode
        overwrite replaces, ``INSERT OVERWRITE`` included; checked here), while
        ``replaceWhere`` replaces rows only, so a clustered table's rows are all
        replaced through ``replaceWhere 'true'``: the same rows, the table kept.
        """
        return {"replaceWhere": "true"} if self._clustered.get(plan.stream.name) else {}

    def _tasks_reason(self, plan: StreamPlan) -> str:
        """Why the tasks' files, committed through delta-rs, hold this stream's rows."""
        choice = self._choices.get(plan.stream.name)
        return choice.reason if choice is not None and choice.folder else "task path"

    def _spark_reason(self, plan: StreamPlan) -> str:
        """Why Spark's writer, not the tasks, commits this stream's checkpoints."""
        refusal = self._history_refusals.get(plan.stream.name)
        if plan.stream.destination_sync_mode is DestinationSyncMode.HISTORY and refusal:
            return f"history commits through MERGE: {refusal}"
        if plan.stream.destination_sync_mode in (DestinationSyncMode.APPEND_DEDUP,
                                                 DestinationSyncMode.HISTORY):
            return f"{plan.stream.destination_sync_mode} commits through MERGE"
        choice = self._choices.get(plan.stream.name)
        if choice is not None and choice.folder is None:
            return choice.reason
        return "the engine handed the rows to Spark's writer"

    def replace_run(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
                    rows: DataFrame, marker: CommitMarker, *,
                    replaced_run_id: str) -> CommitResult:
        """One Delta commit: ``replaceWhere _hw_run_id = <run>`` with the re-read rows.

        Rows of every other run are untouched; the rows written carry the
        replaced run's id, so a retried replay replaces them again (and the
        commit's ``txnAppId``/``txnVersion`` make a retried commit a no-op).
        An overwrite table is replayed only while it still holds nothing but
        that run's rows: after a later full refresh they are not its content.
        """
        from pyspark.sql import functions as F

        location = self.table_location(plan.stream.name)
        literal = _sql_text(replaced_run_id)
        rows = with_variants(rows, self._variants.get(plan.stream.name, ()))
        if plan.stream.destination_sync_mode is DestinationSyncMode.OVERWRITE:
            others = (spark.read.format("delta").load(location)
                      .where(F.col("_hw_run_id") != replaced_run_id).limit(1).count())
            if others:
                raise DestinationError(
                    f"the table at {location} was overwritten by a later full refresh, so run "
                    f"{replaced_run_id}'s rows are no longer its content: replaying it would "
                    "mix two generations of the table; sync it again instead",
                    stream=marker.stream)
        try:
            counts = _write(rows, marker, location, "overwrite",
                            replaceWhere=f"_hw_run_id = '{literal}'")
            return _commit_lookup._committed(spark, location, marker, counts)
        except StoreBehindTableError:
            raise
        except Exception as exc:
            return _commit_lookup._after_error(spark, location, marker, exc,
                                f"replacing the rows of run {replaced_run_id} in {location}")

    # ----------------------------------------------------------------- realigning

    def lane_versions(self, spark: SparkSession, stream: str,
                      app_id_prefix: str) -> dict[str, int]:
        return _table_facts.lane_versions(spark, self.table_location(stream), app_id_prefix)

    def run_row_counts(self, spark: SparkSession, stream: str) -> dict[str, int]:
        return _table_facts.run_row_counts(spark, self.table_location(stream))

    def delete_runs(self, spark: SparkSession, stream: str, run_ids: list[str]) -> int:
        return _table_facts.delete_runs(spark, self.table_location(stream), run_ids)

    def delete_checkpoints(self, spark: SparkSession, stream: str, run_id: str,
                           checkpoints: Sequence[int]) -> int:
        # A commit without txn options of its own: a MERGE's session confs must not ride.
        with _SESSION_CONF_LOCK:
            return _table_facts.delete_checkpoints(spark, self.table_location(stream), run_id,
                                                   checkpoints)

    # ------------------------------------------- overwrites: staged, then published

    def stage_files(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
                    files: DataFrame, marker: CommitMarker) -> CommitResult:
        """Run the tasks (they write the files), then write the checkpoint's manifest."""
        location = self.table_location(plan.stream.name)
        folder = _driver_folder(spark, location)
        if folder is None:
            raise DestinationError(f"{location} is not a folder the driver reaches",
                                   stream=marker.stream)
        written = _written_files(files, location, marker)
        manifest = _staging.Manifest(run_id=marker.run_id, stream=marker.stream,
                                     checkpoint=marker.checkpoint_index, files=tuple(written))
        try:
            _staging.write_manifest(folder, manifest)
        except Exception as exc:
            raise _failed(f"staging checkpoint {marker.checkpoint_index} in {location} failed",
                          exc, marker.stream) from exc
        return CommitResult(rows=manifest.rows, rejected=manifest.rejected,
                            bytes=manifest.size, version=None, writer=WRITER_TASKS,
                            writer_reason=self._tasks_reason(plan))

    def stage(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
              rows: DataFrame, marker: CommitMarker) -> CommitResult:
        """Append the checkpoint to the run's staging table, as a commit to the table would."""
        staging = _staging.staging_location(self.table_location(plan.stream.name),
                                            marker.run_id)
        rows = with_variants(rows, self._variants.get(plan.stream.name, ()))
        try:
            self._create_staging_table(spark, staging, rows)
            # The staging table is a table like any other: the same rules decide
            # whether an error or a skipped write means the checkpoint landed.
            result = _commit_lookup._committed(spark, staging, marker,
                                               _write(rows, marker, staging, "append"))
        except StoreBehindTableError:
            raise
        except Exception as exc:
            result = _commit_lookup._after_error(spark, staging, marker, exc,
                                  f"staging checkpoint {marker.checkpoint_index} in {staging}")
        return replace(result, version=None, writer=WRITER_SPARK,
                       writer_reason=self._spark_reason(plan))

    def _staging_folder(self, spark: SparkSession, plan: StreamPlan) -> TableFolder | None:
        """The folder the stream's tasks stage files in (its writer choice), or None: Spark."""
        choice = self._choices.get(plan.stream.name) or self._files_folder(spark, plan)
        return choice.folder

    def find_staged(self, spark: SparkSession, plan: StreamPlan,
                    marker: CommitMarker) -> CommitResult | None:
        location = self.table_location(plan.stream.name)
        folder = self._staging_folder(spark, plan)
        if folder is not None:
            manifest = _staging.read_manifest(folder, marker.run_id, marker.checkpoint_index)
            if manifest is None:
                return None
            return CommitResult(rows=manifest.rows, rejected=manifest.rejected,
                                bytes=manifest.size, version=None, already_committed=True,
                                writer=WRITER_TASKS, writer_reason=self._tasks_reason(plan))
        staging = _staging.staging_location(location, marker.run_id)
        if not _publish.staging_table_exists(spark, staging):
            return None
        found = _commit_lookup._tagged_commit(spark, staging, marker)
        if found is None:
            return None
        _, metrics, tag, _ = found
        return CommitResult(rows=int(metrics.get("numOutputRows") or 0),
                            rejected=tagged_counts(tag).get("rejected", 0),
                            bytes=_commit_lookup._bytes_written(metrics), version=None,
                            already_committed=True,
                            writer=WRITER_SPARK, writer_reason=self._spark_reason(plan))

    def publish(self, spark: SparkSession, plan: StreamPlan,
                marker: PublishMarker) -> CommitResult:
        """One commit in mode overwrite of every staged checkpoint; then the staging goes.

        Either writer: any error is followed by a look for the publish's tag in
        the table before the publish counts as failed (a commit may land and
        raise afterwards), and a publish skipped by its ``txn`` pair is one an
        earlier attempt made, found by its tag, or else the metadata store is
        behind the table (its indices were handed out again), which is an error.
        """
        location = self.table_location(plan.stream.name)
        folder = self._staging_folder(spark, plan)
        earlier = _commit_lookup._published_commit(spark, location, marker, within_latest=50)
        if earlier is not None:  # a killed attempt published (and may have cleaned up)
            version, metrics, tag = earlier
            counts = tagged_counts(tag)
            result = CommitResult(rows=int(metrics.get("numOutputRows") or counts.get("rows")
                                           or 0),
                                  rejected=counts.get("rejected", 0),
                                  bytes=(_commit_lookup._bytes_written(metrics)
                                         or counts.get("bytes", 0)),
                                  version=version, already_committed=True)
        elif folder is not None:
            result = _publish.publish_files(spark, folder, location, marker)
        else:
            result = _publish.publish_staging_table(spark, location, marker,
                                                   self._overwrite_options(plan))
        _staging.remove(spark, location, run_id=marker.run_id, table=folder)
        if folder is not None:
            return replace(result, writer=WRITER_TASKS, writer_reason=self._tasks_reason(plan))
        return replace(result, writer=WRITER_SPARK, writer_reason=self._spark_reason(plan))

    def clear_staging(self, spark: SparkSession, plan: StreamPlan, *, keep_run_id: str) -> None:
        _staging.remove(spark, self.table_location(plan.stream.name), keep_run_id=keep_run_id,
                        table=self._staging_folder(spark, plan))

    def _create_staging_table(self, spark: SparkSession, staging: str, rows: DataFrame) -> None:
        """Create the run's staging table (empty, ``rows``' columns) unless it exists."""
        with self._staging_lock:
            if staging in self._staging_tables:
                return
            if not _publish.staging_table_exists(spark, staging):
                with _SESSION_CONF_LOCK:  # a commit without txn options of its own
                    spark.createDataFrame([], rows.schema).write.format("delta").mode(
                        "append").save(staging)
            self._staging_tables.add(staging)

    def _merge(self, spark: SparkSession, plan: StreamPlan, rows: DataFrame,
               marker: CommitMarker, location: str,
               partition_order: Sequence[str]) -> Mapping[str, Any]:
        """MERGE one checkpoint on the primary key; return its row and reject counts.

        ``partition_order`` is the checkpoint's partition ids in plan order: of two
        rows of one key with the same cursor, the one from the later partition wins,
        then the later record of that partition (``_merge_rule.py``).  With
        ``deletes: hard`` a winning delete (``_deletes.py``) deletes the key's row.
        """
        keys = list(plan.stream.primary_key)
        cursor = plan.stream.cursor_field
        staged, counted = _materialised(rows)
        latest = latest_rows(staged, keys, cursor, partition_order)
        hard = deleted_column(staged.columns) if plan.stream.deletes == "hard" else None
        with _txn_confs(spark, marker):
            merge(spark, location, latest, on=keys_match(keys), update_when=update_when(cursor),
                  deleted=hard)
        return counted

    def _history(self, spark: SparkSession, plan: StreamPlan, rows: DataFrame,
                 marker: CommitMarker, location: str, partition_order: Sequence[str],
                 ) -> tuple[Callable[[], Mapping[str, Any]], CommitResult | None]:
        """Close and open the checkpoint's versions in one commit (``_history_rule.py``):
        how to get the checkpoint's counts, and the result when Headwater's own commit
        made it (``_history_commit.py``; else Spark's MERGE did, or an append).

        Into a table with no files (a first sync) the versions are appended instead:
        nothing is stored, so no fact of a key is read and none of its versions is
        closed, and an append reads the checkpoint's rows once (no materialising),
        idempotent by the same ``txn`` pair as every append.
        """
        keys = list(plan.stream.primary_key)
        cursor, planned_at = plan.stream.cursor_field, plan.planned_at
        if _file_count(spark, location) == 0:
            observed, counts = _observed(rows, marker)
            _save(history_changes(observed, None, keys=keys, cursor=cursor,
                                  partition_order=partition_order,
                                  planned_at=planned_at).opened, marker, location, "append")
            return counts, None
        staged, counted = _materialised(rows)
        # The source computed once, before the commit: Delta plans a MERGE's source that
        # is not a table scan again in each of its phases, and re-optimises the rule's
        # joins and windows after each stage of each (most of the MERGE's time went there).
        # The rule spreads the checkpoint's rows by key itself (a checkpoint's rows are
        # often one partition).

        def rule(table: DataFrame) -> DataFrame:
            """The MERGE's (or the own commit's) rows of the checkpoint against ``table``."""
            return history_merge_rows(staged, table, keys=keys, cursor=cursor,
                                      partition_order=partition_order, planned_at=planned_at,
                                      action=_ACTION,
                                      broadcast_keys=int(counted["rows"]) <= _BROADCAST_KEYS)

        own = self._own_history_folder(spark, plan, location)
        if own is not None:
            return (lambda: counted), self._history_commit(spark, plan, own, rule, marker,
                                                           location, counted)
        # A closing row carries the stored copy of the version it closes, which the MERGE
        # sets back: so the copy must be the table's as the MERGE finds it.  The table is
        # read at one version and the MERGE runs only if no commit came after it (an
        # UPDATE by another writer, say one blanking a column, would be undone): else
        # the source is computed again.  What remains is the moment between that check
        # and the MERGE's own snapshot; a commit after that one is Delta's conflict.
        for _ in range(_PINNED_TRIES):
            version = _latest_version(spark, location)
            table = spark.read.format("delta").option("versionAsOf", version).load(location)
            source = rule(table).localCheckpoint(eager=True)
            emit("history-closing-read")
            if _latest_version(spark, location) == version:
                break
        else:
            raise _other_writer(location, plan.stream.name)
        # Delta's own copy of the source is not needed: it is already materialised.
        with _txn_confs(spark, marker, {_MATERIALIZE_SOURCE_CONF: "none"}):
            merge_history(spark, location, source, keys_match=keys_match(keys), action=_ACTION,
                          columns=[c for c in staged.columns if c not in (_ACTION, WAS)]
                          + [VALID_FROM, VALID_TO, IS_CURRENT],
                          valid_from=VALID_FROM, valid_to=VALID_TO, is_current=IS_CURRENT,
                          was=WAS, copied=_copied(table.schema))
        return (lambda: counted), None

    def _own_history_folder(self, spark: SparkSession, plan: StreamPlan,
                            location: str) -> TableFolder | None:
        """The table's folder when a history checkpoint commits to it itself
        (``_history_commit.history_refusal``), else None (Spark's MERGE; the reason kept)."""
        choice = _writability.reachable_folder(spark, location, self.config)
        folder = choice.folder
        state = None
        if folder is not None:
            try:
                state = _delta_rs.table_state(folder)
            except Exception as exc:
                choice = _unreadable(exc)
        refusal = choice.reason if folder is None or state is None else \
            history_refusal(state.protocol)
        if refusal is None and folder is not None and folder.store is not None:
            # Not yet: its differential test (test_history_commit.py) runs on local folders.
            refusal = ("table on an object store: the own history commit is proven against "
                       "Spark's MERGE on local folders only so far")
        if folder is None or state is None or refusal is not None:
            self._history_refusals[plan.stream.name] = refusal or "no table"
            log.info("history checkpoints of %s commit through Spark's MERGE: %s",
                     plan.stream.name, refusal or "no table")
            return None
        return folder

    def _history_commit(self, spark: SparkSession, plan: StreamPlan, folder: TableFolder,
                        rule: Callable[[DataFrame], DataFrame], marker: CommitMarker,
                        location: str, counted: Mapping[str, Any]) -> CommitResult:
        """The checkpoint's versions in Headwater's own commit (``_history_commit.py``):
        the table read at its latest version, the commit that version's successor, and
        read again when another writer took it first."""
        from pyspark.sql.types import StructType

        rows, rejected = int(counted["rows"]), int(counted["rejected"])
        for _ in range(_PINNED_TRIES):
            latest = _delta_rs.latest_state(folder)
            if latest is None:
                raise DestinationError(f"the history table {location} is gone",
                                       stream=plan.stream.name)
            version, state = latest
            refusal = history_refusal(state.protocol)
            if refusal is not None:  # changed since the checkpoint chose (another writer)
                raise DestinationError(
                    f"the history table {location} changed while the checkpoint began: "
                    f"{refusal}; the next run commits through Spark's MERGE",
                    stream=plan.stream.name)
            files = ParquetFiles(
                folder=folder.uri, store=folder.store,
                stats_columns=listed_columns(state.properties.get(STATS_PROPERTY))
                or list(STATS_META_COLUMNS), name_tag=run_file_tag(marker.run_id))
            interval = int(state.properties.get(_delta_rs.CHECKPOINT_INTERVAL_PROPERTY)
                           or _delta_rs.CHECKPOINT_INTERVAL)
            began = time.perf_counter()
            # At ``version`` exactly: the rows read are in the files the commit re-adds.
            live = live_files(folder, version)
            schema = StructType.fromJson(state.schema_json)
            table = live_rows(spark, folder, location, live, schema)
            if table is None:
                table = with_places(spark.read.format("delta").option("versionAsOf", version)
                                    .load(location))
            # Not held: the one job that writes the versions computes them (the rows read
            # are the files of ``version`` whenever that job runs).
            source = rule(table)
            emit("history-closing-read")
            ruled = time.perf_counter()
            done = commit_versions(
                folder, source, table_schema=schema, live=live,
                app_id=marker.app_id, txn_version=marker.version,
                tag=lambda size: marker.tag_with_counts(rows, rejected, size),
                files=files, action=_ACTION, checkpoint_interval=interval)
            log.info("history checkpoint %s of %s: versions to close and open read in %.1f s, "
                     "written and committed in %.1f s", marker.checkpoint_index,
                     plan.stream.name, ruled - began, time.perf_counter() - ruled)
            if done is None:
                continue
            if not done.made:
                found = _commit_lookup._tagged_commit(spark, location, marker)
                if found is None:
                    return _commit_lookup._skipped(spark, location, marker, done.held)
                return _commit_lookup._landed(found, already_committed=True)
            commit_landed()
            return CommitResult(rows=rows, rejected=rejected, bytes=done.bytes,
                                version=done.version, writer=WRITER_HISTORY,
                                writer_reason="history: closed versions marked by deletion "
                                              "vectors, new ones in the tasks' files, "
                                              "one commit of Headwater's own")
        raise _other_writer(location, plan.stream.name)


def _logged_state(spark: SparkSession,
                  location: str) -> tuple[bool, _delta_rs.TableState | None]:
    """Whether delta-rs found no table at ``location``, and the table as delta-rs reads it.

    ``(False, None)`` where delta-rs does not reach it or cannot read the log: Spark
    then answers everything, as it did before delta-rs was asked.
    """
    read, state = _from_log(spark, location, _delta_rs.table_state)
    return read and state is None, state


def _file_count(spark: SparkSession, location: str) -> int:
    """How many data files the table at ``location`` holds: from its log by delta-rs where
    it reaches and reads it (milliseconds), else by Spark's ``DESCRIBE DETAIL`` (a job)."""
    read, count = _from_log(spark, location, _delta_rs.file_count)
    return count if read and count is not None else _sql.file_count(spark, location)


def _latest_version(spark: SparkSession, location: str) -> int:
    """The table's latest commit version: from its log by delta-rs where it reaches it,
    else by Spark's ``DESCRIBE HISTORY`` (a job); a history checkpoint asks twice."""
    read, version = _from_log(spark, location, _delta_rs.latest_version)
    return version if read and version is not None else _sql.latest_version(spark, location)


def _from_log(spark: SparkSession, location: str,
              read: Callable[[TableFolder], _T]) -> tuple[bool, _T | None]:
    """``(True, read(folder))`` where this process reaches the table's folder as Spark's
    driver does (``_reach.py``) and delta-rs reads its log; ``(False, None)`` otherwise."""
    folder = _driver_folder(spark, location)
    if folder is None:
        return False, None
    try:
        return True, read(folder)
    except Exception:  # a log delta-rs cannot read: Spark's to read
        log.debug("delta-rs cannot read the log at %s; Spark reads it", location,
                  exc_info=True)
        return False, None


#: Headwater's own properties of a history table it creates (a stream's
#: ``table_properties`` win).  Deletion vectors: closing a version then marks the
#: old row deleted and writes the closed copy, instead of rewriting every file
#: that holds a closed version (with changes spread over the keys: every file).
#: Spark (delta-spark 4.4) reads and writes them; delta-rs 1.6.6, which Headwater
#: uses only for a table's log (its history, protocol and schema), reads them too.
HISTORY_TABLE_PROPERTIES = {"delta.enableDeletionVectors": "true"}

#: The column of a history MERGE's source saying what a row does: ``open`` or ``close``.
_ACTION = "_hw_action"
#: How often a history checkpoint reads its table again when a commit came meanwhile.
_PINNED_TRIES = 3
#: A history checkpoint of at most this many rows sends its keys to every task reading the
#: table (``stored_facts``): some tens of MB at most, against a shuffle of the table's rows.
_BROADCAST_KEYS = 1_000_000


def _other_writer(location: str, stream: str) -> DestinationError:
    """A history checkpoint's table took another writer's commit each time it was read."""
    return DestinationError(
        f"the history table {location} took a commit of another writer each of "
        f"{_PINNED_TRIES} times its versions to close were read: stop the other "
        "writer while the stream syncs", stream=stream)


def _copied(schema: StructType) -> list[str]:
    """The columns a history MERGE sets back to the closed version's stored values:
    all but the two it changes, and those Delta computes itself (an identity column
    may not be updated; a generated one is left to its expression)."""
    computed = ("delta.identity.start", "delta.generationExpression")
    return [f.name for f in schema.fields if f.name not in (VALID_TO, IS_CURRENT)
            and not any(key in f.metadata for key in computed)]


def _materialised(rows: DataFrame) -> tuple[DataFrame, Mapping[str, Any]]:
    """``rows`` read once (a MERGE may scan its source twice, and a connector read twice
    is both slow and possibly different), and their counts.

    Counted on the materialised batch rather than observed: Spark Connect does not
    report metrics observed on a plan that is local-checkpointed.
    """
    staged = rows.localCheckpoint(eager=True)
    counted = staged.agg(*_counts()).first()
    return staged, counted.asDict() if counted is not None else {"rows": 0, "rejected": 0}


@contextmanager
def _txn_confs(spark: SparkSession, marker: CommitMarker,
               others: Mapping[str, str] | None = None) -> Iterator[None]:
    """The MERGE inside runs with ``marker``'s idempotency pair and tag (session confs,
    under the lock that keeps them from another commit), unset afterwards; and with
    ``others``, whose earlier values come back afterwards."""
    with _SESSION_CONF_LOCK:
        before = {name: spark.conf.get(name, None) for name in others or {}}
        spark.conf.set(_TXN_APP_CONF, marker.app_id)
        spark.conf.set(_TXN_VERSION_CONF, str(marker.version))
        spark.conf.set(_USER_METADATA_CONF, marker.tag)
        for name, value in (others or {}).items():
            spark.conf.set(name, value)
        try:
            yield
        finally:
            # These confs outlive the commit; left set, the next MERGE would be
            # skipped as a duplicate of this one.
            spark.conf.unset(_TXN_APP_CONF)
            spark.conf.unset(_TXN_VERSION_CONF)
            spark.conf.unset(_USER_METADATA_CONF)
            for name, earlier in before.items():
                if earlier is None:
                    spark.conf.unset(name)
                else:
                    spark.conf.set(name, earlier)


def _written_files(files: DataFrame, location: str,
                   marker: CommitMarker) -> list[_delta_rs.WrittenFile]:
    """Run a checkpoint's tasks (they write its files); the files they describe."""
    try:
        return [_delta_rs.WrittenFile(**row.asDict()) for row in files.collect()]
    except Exception as exc:
        raise _failed(f"writing the files of checkpoint {marker.checkpoint_index} to "
                      f"{location} failed", exc, marker.stream) from exc


def _write(rows: DataFrame, marker: CommitMarker, location: str, mode: str,
           **options: str) -> Callable[[], Mapping[str, Any]]:
    """One idempotent Delta write of ``rows`` (``txnAppId``/``txnVersion`` + commit tag).

    Returns how to get the rows' counts, observed by the very job that wrote them.
    Call it only once the commit is found in the history: when the table already
    holds the txn version, Delta skips the write, no job runs, and the observation
    would wait forever.
    """
    observed, counts = _observed(rows, marker)
    _save(observed, marker, location, mode, **options)
    return counts


def _observed(rows: DataFrame,
              marker: CommitMarker) -> tuple[DataFrame, Callable[[], Mapping[str, Any]]]:
    """``rows`` observed for their counts (:func:`_counts`) by whichever job reads them,
    and how to get the counts once it ran (:func:`_write` says when that is)."""
    from pyspark.sql import Observation

    observation = Observation(f"hw_{marker.stream}_{marker.checkpoint_index}_{id(rows)}")
    return rows.observe(observation, *_counts()), lambda: observation.get


def _save(rows: DataFrame, marker: CommitMarker, location: str, mode: str,
          **options: str) -> None:
    """Write ``rows`` to the table in one commit with ``marker``'s ``txn`` pair and tag."""
    writer = (
        rows.write.format("delta").mode(mode)
        .option("txnAppId", marker.app_id)
        .option("txnVersion", marker.version)
        .option("userMetadata", marker.tag)
    )
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.save(location)


def _counts() -> list[Column]:
    """The figures every commit reports: rows, and rows with notes (rejected values)."""
    from pyspark.sql import functions as F

    return [F.count(F.lit(1)).alias("rows"), F.count("_hw_notes").alias("rejected")]


def _sql_text(text: str) -> str:
    """``text`` inside a single-quoted SQL string literal."""
    return text.replace("\\", "\\\\").replace("'", "\\'")


__all__ = ["WRITER_SPARK", "WRITER_TASKS", "DeltaDestination"]
