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
  then the later record).

Two ways to write (``writer`` in the config):

* ``auto`` (the default): on classic Spark, ``append`` and ``overwrite`` tables in a
  local folder, on S3 (and S3-compatible stores with conditional writes) or on
  Azure (``_store.py``) are written by the tasks themselves (pyarrow, ``_files.py``) and
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
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
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
    tagged_publish,
)
from headwater.destinations._dataset import without_credentials
from headwater.destinations._merge_rule import keys_match, latest_rows, update_when
from headwater.destinations._uncommitted import local_folder_of
from headwater.destinations.delta import _abort, _catalog, _delta_rs, _sql, _staging, _table_facts
from headwater.destinations.delta._azure_check import check_azure
from headwater.destinations.delta._catalog import IDENTIFIER_PATTERN, PREFIX_PATTERN
from headwater.destinations.delta._files import ParquetFiles
from headwater.destinations.delta._session import SPARK_NEEDS
from headwater.destinations.delta._sql import (
    history,
    is_delta_table,
    merge,
    quote,
    table_ref,
)
from headwater.destinations.delta._stats import (
    STATS_META_COLUMNS,
    STATS_PROPERTY,
    listed_columns,
    stats_columns,
    with_columns,
)
from headwater.destinations.delta._store import (
    STORE_NAMES,
    S3Access,
    TableFolder,
    local_folder,
    on_object_store,
    s3_bucket_and_key,
    store_folder,
    store_refusal,
)
from headwater.destinations.delta._store_check import check_s3
from headwater.destinations.delta._table_features import task_path_refusal
from headwater.destinations.delta._table_fit import refuse_misfits
from headwater.destinations.delta._variant import (
    spark_schema,
    task_path_reason,
    variant_columns,
    with_variants,
)
from headwater.errors import (
    CommitOutcomeUnknownError,
    DestinationError,
    HeadwaterError,
    StoreBehindTableError,
)
from headwater.sync_modes import DestinationSyncMode
from headwater.table_schema import (
    JSON_TEXT,
    LOGICAL_KEY,
    META_FIELDS,
    VARIANT,
    json_kind,
    unwritten_columns,
)

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import DataType, StructField, StructType

    from headwater.plan import CheckpointPlan, StreamPlan, TableLayout

log = logging.getLogger(__name__)

#: Commits a just-made commit is looked for among: lanes commit side by side.
_RECENT_COMMITS = 50

#: MERGE takes its idempotency keys and commit tag from *session* confs, which
#: every thread of this process shares; this lock keeps one MERGE's confs from
#: leaking into another commit.  Every Spark commit without txn options of its own
#: (a MERGE, a table's creation, ALTER TABLE) holds it; writes that pass
#: ``txnAppId``/``userMetadata`` as options need not, as options win over confs.
_SESSION_CONF_LOCK = threading.Lock()
_TXN_APP_CONF = "spark.databricks.delta.write.txnAppId"
_TXN_VERSION_CONF = "spark.databricks.delta.write.txnVersion"
_USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"

#: ``CommitResult.writer`` of a commit of files the tasks wrote, added through delta-rs.
WRITER_TASKS = "tasks+delta-rs"
#: ``CommitResult.writer`` of a commit Spark's Delta writer made (write, MERGE, replay).
WRITER_SPARK = "spark"


#: Why ``gs://`` tables stay on Spark's writer (``docs/destinations/delta.md``).
_GCS_REASON = ("; on GCS, delta-rs commits through object_store's XML API "
               "(x-goog-if-generation-match: 0), which no GCS emulator the tests run speaks, "
               "so no test proves those commits safe yet")


@dataclass(frozen=True)
class _Choice:
    """Who writes a stream's table: the tasks (into ``folder``) or, when None, Spark; and why."""

    folder: TableFolder | None
    reason: str


class DeltaDestination(Destination):
    type_name = "delta"
    guarantee = "exactly-once"
    capabilities = DestinationCapabilities(
        spark=SPARK_NEEDS,
        # MERGE commits of one table conflict with each other: one lane.
        max_concurrent_commits={DestinationSyncMode.APPEND_DEDUP: 1},
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
        put of it (``_store_check``).  For ``abfss://`` and ``wasbs://`` the same with
        the ``spark.hadoop.fs.azure.*`` settings and Azure's conditional create
        (``_azure_check``).  Any other URI (``gs://``...) is reachable only
        through Spark, which a check does not start: nothing is checked
        (:meth:`check_skipped` says so).  Neither is ``database`` (registering tables
        by name needs the Spark session's catalog).
        """
        folder = local_folder(self.root)
        if folder is not None:
            _check_writable(folder)
            return
        skipped = self.check_skipped()
        if skipped:
            log.info("%s", skipped)
            return
        reached = store_folder(self.root, self._hadoop_setting)
        if reached is None or reached.store is None:
            return
        register_secrets(reached.store.secrets)
        if isinstance(reached.store, S3Access):
            check_s3(self.root, reached.store,
                     conditional_writes=bool(self.config.get("s3_conditional_writes", True)))
        else:
            check_azure(self.root, reached.store)

    def check_tables(self, streams: Mapping[str, pa.Schema]) -> None:
        """Each stream's existing table, read by delta-rs (local folders, S3, Azure), must
        take the stream's rows (``_table_fit.py``); other locations are Spark's to read."""
        from pyspark.sql.types import StructType

        for stream, data_schema in streams.items():
            location = self.table_location(stream)
            local = local_folder(location)
            if local is not None:
                folder: TableFolder | None = TableFolder(local)
            elif on_object_store(location) and not store_refusal(location,
                                                                 self._hadoop_setting):
                folder = store_folder(location, self._hadoop_setting)
            else:
                continue
            state = None if folder is None else _delta_rs.table_state(folder)
            if state is not None:
                refuse_misfits(StructType.fromJson(state.schema_json), data_schema, location,
                               stream)

    def check_skipped(self) -> str | None:
        if local_folder(self.root) is not None:
            return None
        if not on_object_store(self.root):
            return (f"{self.root} is not a local folder nor on S3 or Azure: it is "
                    "reachable only through Spark, which a check does not start, so nothing "
                    "was checked")
        refusal = store_refusal(self.root, self._hadoop_setting)
        if refusal:
            return f"{refusal}: {self.root} was not checked (a check starts no Spark)"
        return None

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
        if self.config.get("writer", "auto") != "auto":
            return _Choice(None, "writer: spark in the destination's config")
        if plan.stream.destination_sync_mode is DestinationSyncMode.APPEND_DEDUP:
            return _Choice(None, "append_dedup commits through MERGE")
        location = self.table_location(plan.stream.name)
        if local_folder(location) is None and not on_object_store(location):
            return _Choice(None, "object store path other than S3 and Azure (abfss://, "
                                 "wasbs://): the task path writes local folders and those "
                                 "stores only" + (_GCS_REASON if location.startswith("gs://")
                                                  else ""))
        on_s3 = s3_bucket_and_key(location) is not None
        if on_s3 and not self.config.get("s3_conditional_writes", True):
            return _Choice(None, "s3_conditional_writes: false (a commit through delta-rs "
                                 "needs the store's conditional writes)")
        refusal = _store_refusal(spark, location)
        if refusal:
            return _Choice(None, refusal)
        folder = _driver_folder(spark, location)
        if folder is None:
            return _Choice(None, "Spark Connect (the driver's filesystem is the server's)")
        return _Choice(folder, "")

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

    def file_writer(self, spark: SparkSession, plan: StreamPlan) -> ParquetFiles | None:
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
                            stats_columns=listed or list(STATS_META_COLUMNS))

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
        wanted = pa.schema(META_FIELDS + list(data_schema))
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
                detail = _sql.table_detail(spark, location)
                if detail is None:
                    _create_table(spark, location, spark_schema(wanted), layout)
                    self._clustered[plan.stream.name] = bool(layout.cluster_by)
                    return data_schema
                existing = {f.name: f for f in spark.read.format("delta").load(location).schema}
                if state is None:  # not read by delta-rs above
                    refuse_misfits(existing.values(), data_schema, location, plan.stream.name)
                _report_layout(plan, location, detail)
                self._clustered[plan.stream.name] = bool(detail.clustering_columns)
                properties = dict(detail.properties)
                # The log's schema, where delta-rs read it: Spark's drops the generation
                # expressions and identity settings that say which columns Delta fills.
                logged = (StructType.fromJson(state.schema_json).fields if state is not None
                          else existing.values())
                self._unwritten[plan.stream.name] = unwritten_columns(
                    _not_filled_by_delta(logged), data_schema)
                wanted_spark = spark_schema(wanted)
                missing = [f for f in wanted_spark if f.name not in existing]
                nested = nested_additions(wanted_spark, existing)
                if missing or nested:
                    columns = ", ".join(
                        [f"{quote(f.name)} {f.dataType.simpleString()}" for f in missing]
                        + [f"{'.'.join(quote(p) for p in path)} {kind.simpleString()}"
                           for path, kind in nested])
                    spark.sql(f"ALTER TABLE {table_ref(location)} ADD COLUMNS ({columns})")
                changed: dict[str, str] = {}
                if missing and STATS_PROPERTY in properties:
                    listed = stats_columns(missing, already=properties[STATS_PROPERTY])
                    if listed != properties[STATS_PROPERTY]:
                        changed[STATS_PROPERTY] = listed
                # The stream's own properties win over Headwater's statistics list.
                changed.update(_properties_to_set(layout, {**properties, **changed}))
                if changed:
                    _sql.set_properties(spark, location, changed)
                if nested:  # the structs as they are now
                    existing = {f.name: f
                                for f in spark.read.format("delta").load(location).schema}
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
        found = _tagged_commit(spark, location, marker)
        if found is not None:
            return _landed(found, already_committed=True)
        # The history may no longer list it (the log was cleaned up); the lane's txn
        # version stays, and a lane commits its checkpoints in index order.
        held = _lane_version(spark, location, marker.app_id)
        if held is None or held < marker.version:
            return None
        return _skipped(spark, location, marker, held)

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
            landed = _after_error(spark, location, marker, exc, what)
            return replace(landed, rows=rows, rejected=rejected, bytes=size)
        if committed.made:
            return CommitResult(rows=rows, rejected=rejected, bytes=size,
                                version=committed.version, writer=WRITER_TASKS,
                                writer_reason=self._tasks_reason(plan))
        # The table holds this txn version already, and the files just written stay
        # out of it.  An earlier attempt's commit is in the history, with its tag.
        found = _tagged_commit(spark, location, marker)
        if found is None:
            return _skipped(spark, location, marker, committed.held)
        return CommitResult(rows=rows, rejected=rejected, bytes=size, version=found[0],
                            already_committed=True,
                            partition_states=tagged_partition_states(found[2]),
                            writer=_writer_of(found[3]), writer_reason=_EARLIER_ATTEMPT)

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
            else:
                write_mode = ("overwrite" if mode is DestinationSyncMode.OVERWRITE and first_of_run
                              else "append")
                options = self._overwrite_options(plan) if write_mode == "overwrite" else {}
                counts = _write(rows, marker, location, write_mode, **options)
            result = _committed(spark, location, marker, counts)
            if result.writer is None and not result.already_committed:
                result = replace(result, writer=WRITER_SPARK,
                                 writer_reason=self._spark_reason(plan))
            return result
        except StoreBehindTableError:
            raise
        except Exception as exc:
            return _after_error(spark, location, marker, exc,
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
        if plan.stream.destination_sync_mode is DestinationSyncMode.APPEND_DEDUP:
            return "append_dedup commits through MERGE"
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
            return _committed(spark, location, marker, counts)
        except StoreBehindTableError:
            raise
        except Exception as exc:
            return _after_error(spark, location, marker, exc,
                                f"replacing the rows of run {replaced_run_id} in {location}")

    # ----------------------------------------------------------------- realigning

    def lane_versions(self, spark: SparkSession, stream: str,
                      app_id_prefix: str) -> dict[str, int]:
        return _table_facts.lane_versions(spark, self.table_location(stream), app_id_prefix)

    def run_row_counts(self, spark: SparkSession, stream: str) -> dict[str, int]:
        return _table_facts.run_row_counts(spark, self.table_location(stream))

    def delete_runs(self, spark: SparkSession, stream: str, run_ids: list[str]) -> int:
        return _table_facts.delete_runs(spark, self.table_location(stream), run_ids)

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
            result = _committed(spark, staging, marker, _write(rows, marker, staging, "append"))
        except StoreBehindTableError:
            raise
        except Exception as exc:
            result = _after_error(spark, staging, marker, exc,
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
        if not _staging_table_exists(spark, staging):
            return None
        found = _tagged_commit(spark, staging, marker)
        if found is None:
            return None
        _, metrics, tag, _ = found
        return CommitResult(rows=int(metrics.get("numOutputRows") or 0),
                            rejected=tagged_counts(tag).get("rejected", 0),
                            bytes=_bytes_written(metrics), version=None, already_committed=True,
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
        earlier = _published_commit(spark, location, marker, within_latest=50)
        if earlier is not None:  # a killed attempt published (and may have cleaned up)
            version, metrics, tag = earlier
            counts = tagged_counts(tag)
            result = CommitResult(rows=int(metrics.get("numOutputRows") or counts.get("rows")
                                           or 0),
                                  rejected=counts.get("rejected", 0),
                                  bytes=_bytes_written(metrics) or counts.get("bytes", 0),
                                  version=version, already_committed=True)
        elif folder is not None:
            result = self._publish_files(spark, folder, location, marker)
        else:
            result = self._publish_staging_table(spark, plan, location, marker)
        _staging.remove(spark, location, run_id=marker.run_id, table=folder)
        if folder is not None:
            return replace(result, writer=WRITER_TASKS, writer_reason=self._tasks_reason(plan))
        return replace(result, writer=WRITER_SPARK, writer_reason=self._spark_reason(plan))

    def clear_staging(self, spark: SparkSession, plan: StreamPlan, *, keep_run_id: str) -> None:
        _staging.remove(spark, self.table_location(plan.stream.name), keep_run_id=keep_run_id,
                        table=self._staging_folder(spark, plan))

    def _publish_files(self, spark: SparkSession, folder: TableFolder, location: str,
                       marker: PublishMarker) -> CommitResult:
        manifests = [_staging.read_manifest(folder, marker.run_id, index)
                     for index in marker.checkpoints]
        missing = [i for i, m in zip(marker.checkpoints, manifests, strict=True) if m is None]
        if missing:
            raise DestinationError(
                f"cannot publish run {marker.run_id} to {location}: checkpoints "
                f"{', '.join(map(str, missing))} are not staged; the table is left as it was",
                stream=marker.stream)
        staged = [m for m in manifests if m is not None]
        gone = _staging.missing_files(folder, staged)
        if gone:
            raise DestinationError(
                f"cannot publish run {marker.run_id} to {location}: {len(gone)} staged files "
                f"were removed (a VACUUM?), e.g. {gone[0]}; the table is left as it was",
                stream=marker.stream)
        files = [f for m in staged for f in m.files]
        rows = sum(m.rows for m in staged)
        rejected = sum(m.rejected for m in staged)
        size = sum(m.size for m in staged)
        try:
            committed = _delta_rs.commit_files(folder, files, mode="overwrite",
                                               app_id=marker.app_id, version=marker.version,
                                               tag=marker.tag_with_counts(rows, rejected, size))
        except Exception as exc:
            if _publish_after_error(spark, location, marker, exc) is None:
                raise _failed(f"publishing run {marker.run_id} to {location} failed", exc,
                              marker.stream) from exc
            committed = _delta_rs.Committed(made=False)
        version = committed.version
        if not committed.made:
            version = self._earlier_publish(spark, location, marker)
        return CommitResult(rows=rows, rejected=rejected, bytes=size, version=version,
                            already_committed=not committed.made)

    def _publish_staging_table(self, spark: SparkSession, plan: StreamPlan, location: str,
                               marker: PublishMarker) -> CommitResult:
        staging = _staging.staging_location(location, marker.run_id)
        staged = (_staged_indices(spark, staging, marker)
                  if _staging_table_exists(spark, staging) else set())
        missing = [i for i in marker.checkpoints if i not in staged]
        if missing:
            raise DestinationError(
                f"cannot publish run {marker.run_id} to {location}: checkpoints "
                f"{', '.join(map(str, missing))} are not staged; the table is left as it was",
                stream=marker.stream)
        try:
            # No observed counts: Delta skips the write of a txn it holds, and an
            # observation of a job that never ran would wait for ever.
            writer = (spark.read.format("delta").load(staging).write.format("delta")
                      .mode("overwrite").option("txnAppId", marker.app_id)
                      .option("txnVersion", marker.version).option("userMetadata", marker.tag))
            for key, value in self._overwrite_options(plan).items():
                writer = writer.option(key, value)
            writer.save(location)
        except Exception as exc:
            if _publish_after_error(spark, location, marker, exc) is None:
                raise _failed(f"publishing run {marker.run_id} to {location} failed", exc,
                              marker.stream) from exc
        found = _published_commit(spark, location, marker, within_latest=50) \
            or _published_commit(spark, location, marker)
        if found is None:
            self._earlier_publish(spark, location, marker)  # raises: the store is behind
            raise AssertionError("unreachable")
        version, metrics, _ = found
        return CommitResult(rows=int(metrics.get("numOutputRows") or 0), rejected=0,
                            bytes=_bytes_written(metrics), version=version)

    def _earlier_publish(self, spark: SparkSession, location: str,
                         marker: PublishMarker) -> int:
        """The version of the publish an earlier attempt made; raise when there is none."""
        found = _published_commit(spark, location, marker)
        if found is None:
            raise DestinationError(
                f"the table at {location} already holds transaction version {marker.version} "
                f"(or a later one) of {marker.app_id}, but no publish of run {marker.run_id}: "
                "the metadata store is behind the table (restored from an older copy?); the "
                "table is left as it was", stream=marker.stream)
        return found[0]

    def _create_staging_table(self, spark: SparkSession, staging: str, rows: DataFrame) -> None:
        """Create the run's staging table (empty, ``rows``' columns) unless it exists."""
        with self._staging_lock:
            if staging in self._staging_tables:
                return
            if not _staging_table_exists(spark, staging):
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
        then the later record of that partition (``_merge_rule.py``).
        """
        keys = list(plan.stream.primary_key)
        cursor = plan.stream.cursor_field
        # Materialise the batch once: MERGE may scan its source twice, and a
        # connector read twice is both slow and possibly different.
        staged = rows.localCheckpoint(eager=True)
        # Counted on the materialised batch rather than observed: Spark Connect does
        # not report metrics observed on a plan that is local-checkpointed.
        counted = staged.agg(*_counts()).first()
        latest = latest_rows(staged, keys, cursor, partition_order)
        on = keys_match(keys)
        newer = update_when(cursor)
        with _SESSION_CONF_LOCK:
            spark.conf.set(_TXN_APP_CONF, marker.app_id)
            spark.conf.set(_TXN_VERSION_CONF, str(marker.version))
            spark.conf.set(_USER_METADATA_CONF, marker.tag)
            try:
                merge(spark, location, latest, on=on, update_when=newer)
            finally:
                # These confs outlive the commit; left set, the next MERGE would be
                # skipped as a duplicate of this one.
                spark.conf.unset(_TXN_APP_CONF)
                spark.conf.unset(_TXN_VERSION_CONF)
                spark.conf.unset(_USER_METADATA_CONF)
        return counted.asDict() if counted is not None else {"rows": 0, "rejected": 0}


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
    from pyspark.sql import Observation

    observation = Observation(f"hw_{marker.stream}_{marker.checkpoint_index}_{id(rows)}")
    writer = (
        rows.observe(observation, *_counts()).write.format("delta").mode(mode)
        .option("txnAppId", marker.app_id)
        .option("txnVersion", marker.version)
        .option("userMetadata", marker.tag)
    )
    for key, value in options.items():
        writer = writer.option(key, value)
    writer.save(location)
    return lambda: observation.get


def _committed(spark: SparkSession, location: str, marker: CommitMarker,
               counts: Callable[[], Mapping[str, Any]]) -> CommitResult:
    """The result of the write just made: its counts, version and bytes from the history.

    No commit of the checkpoint in the history means Delta skipped the write (the
    table held the txn version already): see :func:`_skipped`.
    """
    # Lanes commit side by side, so look among the latest few commits for ours.
    found = _tagged_commit(spark, location, marker, within_latest=_RECENT_COMMITS)
    if found is None:
        return _skipped(spark, location, marker, _lane_version(spark, location, marker.app_id))
    commit_landed()
    figures = counts()
    return CommitResult(rows=int(figures["rows"]), rejected=int(figures["rejected"]),
                        bytes=_bytes_written(found[1]), version=found[0])


def _landed(found: tuple[int, Mapping[str, str], str, str], *,
            already_committed: bool) -> CommitResult:
    """A commit found in the history, with the figures its metrics or its tag carry."""
    version, metrics, tag, engine = found
    counts = tagged_counts(tag)
    rows = int(metrics.get("numOutputRows") or metrics.get("numSourceRows")
               or counts.get("rows") or 0)
    return CommitResult(rows=rows, rejected=counts.get("rejected", 0),
                        bytes=_bytes_written(metrics) or counts.get("bytes", 0),
                        version=version, already_committed=already_committed,
                        partition_states=tagged_partition_states(tag),
                        writer=_writer_of(engine),
                        writer_reason=_EARLIER_ATTEMPT if already_committed else
                        "the commit landed, then its writer raised (see the log)")


def _after_error(spark: SparkSession, location: str, marker: CommitMarker,
                 exc: BaseException, what: str) -> CommitResult:
    """A commit that raised: a success if it landed nonetheless, else the error.

    An error can come after the commit is durable (delta-rs's log checkpoint, a
    lost connection while the commit's answer travels back); declaring such a
    checkpoint failed would have the next run read and write its data again.
    So the table decides: the checkpoint's tagged commit in the history is a
    success, whatever came after it; no such commit, or no table at all (a
    staging table's first commit), is the error.  A lookup that raises for any
    other reason (the store unreachable, credentials refused) answers neither:
    :class:`~headwater.errors.CommitOutcomeUnknownError`, and the engine keeps
    the run resumable so that the next sync looks again.
    """
    try:
        found = _tagged_commit(spark, location, marker, within_latest=_RECENT_COMMITS)
    except Exception as lookup:
        if not _no_table(lookup):  # the table did not answer: whether it landed is unknown
            raise CommitOutcomeUnknownError(
                what, error=_error_line(exc), lookup=_error_line(lookup),
                stream=marker.stream, checkpoint=marker.checkpoint_index) from exc
        log.debug("looking up the commit of checkpoint %s in %s: no table there (%s)",
                  marker.checkpoint_index, location, _error_line(lookup))
        found = None
    if found is None:
        raise _failed(f"{what} failed", exc, marker.stream) from exc
    # The tagged commit may be this writer's (its answer was lost) or a racing
    # writer's of the same checkpoint (this one's commit was then refused): the
    # checkpoint is in the table once either way, which is all that is claimed.
    log.warning("%s raised, and the table's history holds this checkpoint's commit (version "
                "%s), so it counts as committed: %s", what, found[0], _error_line(exc))
    return _landed(found, already_committed=False)


#: Column metadata of values Delta fills itself: generated, identity and default columns.
_FILLED_BY_DELTA = ("delta.generationExpression", "delta.identity.start", "CURRENT_DEFAULT")


def _not_filled_by_delta(fields: Iterable[StructField]) -> list[str]:
    """The names of the columns whose values only a writer gives (a generated, identity or
    defaulted column the stream does not write is no column it lost)."""
    return [f.name for f in fields if not any(key in f.metadata for key in _FILLED_BY_DELTA)]


def _publish_after_error(spark: SparkSession, location: str, marker: PublishMarker,
                         exc: BaseException) -> tuple[int, Mapping[str, str], str] | None:
    """The publish of a publishing commit that raised, looked up; raise when the lookup
    cannot answer (see :func:`_after_error`)."""
    try:
        return _published_commit(spark, location, marker)
    except Exception as lookup:
        raise CommitOutcomeUnknownError(
            f"publishing run {marker.run_id} to {location}", error=_error_line(exc),
            lookup=_error_line(lookup), stream=marker.stream) from exc


#: Spark's error conditions for a lookup in a table that does not exist: a path holding
#: none (``DESCRIBE HISTORY``, ``DESCRIBE DETAIL``), or a path inside a table's folder
#: (a staging table not created yet).  Checked with Delta 4.4: see the unit tests.
_NO_TABLE_CONDITIONS = frozenset({"DELTA_TABLE_ONLY_OPERATION", "DELTA_MISSING_DELTA_TABLE",
                                  "DELTA_INVALID_PARTITION_PATH"})


def _no_table(lookup: BaseException) -> bool:
    """Whether a lookup's error says there is no table there (an answer: nothing landed).

    delta-rs answers a missing table with None, not an error (``_delta_rs.history``);
    Spark raises an ``AnalysisException`` with one of :data:`_NO_TABLE_CONDITIONS`.
    Anything else (an object store's error, a refusal, a lost connection) is no answer.
    """
    from pyspark.errors import AnalysisException

    return (isinstance(lookup, AnalysisException)
            and lookup.getCondition() in _NO_TABLE_CONDITIONS)


def _skipped(spark: SparkSession, location: str, marker: CommitMarker,
             held: int | None) -> CommitResult:
    """The table holds ``marker``'s txn version already, and no commit of its checkpoint.

    On the run's first attempt nothing of the run can be in the table: the
    metadata store handed out an index a lane had used, so it went back in time;
    counting the checkpoint committed would lose its data (Delta wrote nothing).
    On a resumed attempt an earlier attempt committed it, and the log was
    cleaned up since, unless the lane's commit at ``held`` belongs to another run.
    ``held`` is the lane's txn version, when known (None: not readable here).
    """
    found = _tagged_commit(spark, location, marker)  # the whole history, not the latest
    if found is not None:  # ours after all, further back than the latest commits
        return _landed(found, already_committed=marker.attempt > 1)
    owner = _lane_owner(spark, location, marker, held)
    if marker.attempt > 1 and owner in (None, marker.run_id):
        log.warning("checkpoint %s of %s: %s holds txn version %s of %s but its history no "
                    "longer lists this checkpoint's commit (log clean-up); counted as "
                    "committed by an earlier attempt", marker.checkpoint_index, marker.stream,
                    location, held if held is not None else f">= {marker.version}",
                    marker.app_id)
        return CommitResult(rows=0, rejected=0, bytes=0, version=None, already_committed=True)
    holds = f"version {held}" if held is not None else "that version or a later one"
    by = f", committed by run {owner}" if owner not in (None, marker.run_id) else ""
    raise StoreBehindTableError(
        f"the metadata store is behind the table: checkpoint {marker.checkpoint_index} of run "
        f"{marker.run_id} got txn version {marker.version} of {marker.app_id}, and the Delta "
        f"table at {location} already holds {holds} of it{by}, so Delta would skip the "
        "commit as a duplicate and the checkpoint's data would be lost; nothing was committed. "
        "The store was restored from an older copy (or lost writes): run `headwater state "
        "realign CONNECTION.yaml` to move its checkpoint counters past the tables' versions "
        "(it also lists the rows of runs the store does not know), then sync again",
        stream=marker.stream)


def _lane_owner(spark: SparkSession, location: str, marker: CommitMarker,
                held: int | None) -> str | None:
    """The run whose tagged commit of this stream carries checkpoint ``held`` (None: not found).

    A checkpoint's index is its lane's txn version, so that commit is the lane's latest.
    """
    if held is None:
        return None
    try:
        found = _tagged_commit(spark, location, replace(marker, checkpoint_index=held),
                               any_run=True)
    except Exception:
        return None
    if found is None:
        return None
    ours = json.loads(found[2]).get("headwater", {})
    return str(ours.get("run_id")) if isinstance(ours, dict) else None


def _lane_version(spark: SparkSession, location: str, app_id: str) -> int | None:
    """The table's ``txnVersion`` of ``app_id``, where delta-rs can read it (else None)."""
    folder = _driver_folder(spark, location)
    if folder is None:
        return None
    return _delta_rs.transaction_version(folder, app_id)


def _counts() -> list[Column]:
    """The figures every commit reports: rows, and rows with notes (rejected values)."""
    from pyspark.sql import functions as F

    return [F.count(F.lit(1)).alias("rows"), F.count("_hw_notes").alias("rejected")]


def _tagged_commit(spark: SparkSession, location: str, marker: CommitMarker,
                   within_latest: int | None = None, *, any_run: bool = False,
                   ) -> tuple[int, Mapping[str, str], str, str] | None:
    """The version, operation metrics, tag and ``engineInfo`` of ``marker``'s checkpoint's commit.

    Matched on the tag's run, stream and checkpoint rather than on the whole
    text: a tag may also carry the partition states the commit released.  With
    ``any_run``, the commit of that stream's checkpoint by whichever run.
    """
    from pyspark.sql import functions as F

    folder = _driver_folder(spark, location)
    if folder is not None:
        # delta-rs reads the log in the driver's process: no Spark job, no Delta-Spark
        # warm-up in a new JVM, and it reads commits either library made.
        return _tagged_in(_delta_rs.history(folder, within_latest) or [], marker, any_run)

    def tagged(key: str) -> Column:
        return F.get_json_object(F.col("userMetadata"), f"$.headwater.{key}")

    matches = ((tagged("stream") == marker.stream)
               & (tagged("checkpoint") == str(marker.checkpoint_index)))
    if not any_run:
        matches = matches & (tagged("run_id") == marker.run_id)
    found = (history(spark, location, within_latest).where(matches)
             .select("version", "operationMetrics", "userMetadata", "engineInfo")
             .limit(1).collect())
    if not found:
        return None
    return (int(found[0]["version"]), found[0]["operationMetrics"] or {},
            found[0]["userMetadata"], found[0]["engineInfo"] or "")


def _published_commit(spark: SparkSession, location: str, marker: PublishMarker,
                      within_latest: int | None = None,
                      ) -> tuple[int, Mapping[str, str], str] | None:
    """The version, operation metrics and tag of the commit publishing ``marker``'s run."""
    for version, metrics, tag in _tagged_commits(spark, location, within_latest):
        found = tagged_publish(tag)
        if found is not None and found[:2] == (marker.run_id, marker.stream):
            return version, metrics, tag
    return None


def _staged_indices(spark: SparkSession, staging: str, marker: PublishMarker) -> set[int]:
    """The checkpoints of ``marker``'s run that the staging table at ``staging`` holds."""
    indices = set()
    for _, _, tag in _tagged_commits(spark, staging):
        try:
            ours = json.loads(tag).get("headwater") or {}
        except (ValueError, AttributeError):
            continue
        if (ours.get("run_id") == marker.run_id and ours.get("stream") == marker.stream
                and ours.get("checkpoint") is not None):
            indices.add(int(ours["checkpoint"]))
    return indices


def _tagged_commits(spark: SparkSession, location: str, within_latest: int | None = None,
                    ) -> list[tuple[int, Mapping[str, str], str]]:
    """Every commit of the table that carries a tag, newest first."""
    from pyspark.sql import functions as F

    folder = _driver_folder(spark, location)
    if folder is not None:
        commits = _delta_rs.history(folder, within_latest) or []
        return [(int(c["version"]), {k: str(v) for k, v in (c.get("operationMetrics") or {})
                                     .items()}, str(c["userMetadata"]))
                for c in commits if isinstance(c.get("userMetadata"), str)]
    found = (history(spark, location, within_latest).where(F.col("userMetadata").isNotNull())
             .select("version", "operationMetrics", "userMetadata").collect())
    return [(int(r["version"]), r["operationMetrics"] or {}, str(r["userMetadata"]))
            for r in found]


def _staging_table_exists(spark: SparkSession, staging: str) -> bool:
    """Whether the staging table at ``staging`` exists yet.

    Not ``is_delta_table`` alone: Delta resolves a path inside a table's folder
    to that table, and a staging table not created yet is such a path (Delta
    then calls its last part an invalid partition path).
    """
    from pyspark.errors import AnalysisException

    folder = _driver_folder(spark, staging)
    if folder is not None:
        return folder.has_folder("_delta_log")
    try:
        return is_delta_table(spark, staging)
    except AnalysisException as exc:
        if exc.getCondition() == "DELTA_INVALID_PARTITION_PATH":
            return False
        raise


def _check_writable(folder: str) -> None:
    """Create ``folder`` if need be, create and remove a scratch file in it, and remove the
    folders created; a :class:`DestinationError` naming the folder and the OS error if not."""
    path = Path(folder)
    advice = ("give this user write access there, or set destination.config.path to a "
              "writable folder")
    if path.exists() and not path.is_dir():
        raise DestinationError(f"the Delta destination's path {folder} is not a folder "
                               f"(a file is in the way); move it, or set "
                               "destination.config.path to a folder")
    created = [p for p in (path, *path.parents) if not p.exists()]  # deepest first
    try:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DestinationError(f"the Delta destination's folder {folder} does not exist "
                                   f"and cannot be created ({exc}); create it, or {advice}",
                                   ) from exc
        scratch = path / f".headwater-check-{uuid.uuid4().hex}"
        try:
            with scratch.open("x") as handle:
                handle.write("headwater check\n")
            scratch.unlink()
        except OSError as exc:
            with contextlib.suppress(OSError):
                scratch.unlink()
            raise DestinationError(f"the Delta destination's folder {folder} is not writable "
                                   f"(creating a scratch file in it failed: {exc}); {advice}",
                                   ) from exc
    finally:
        for made in created:  # only the ones this check made, deepest first
            if not made.exists():
                continue
            try:
                made.rmdir()
            except OSError:
                break


def _driver_folder(spark: SparkSession, location: str) -> TableFolder | None:
    """``location`` as a folder this process reaches as Spark's driver does, or None.

    A local folder, or an S3 or Azure location reached with the ``fs.s3a.*`` or
    ``fs.azure.*`` settings of the session's Hadoop configuration
    (``_store.store_folder``; its secret values are registered with the masker
    here), unless Spark's connector is set to get its credentials some way
    pyarrow and delta-rs cannot follow: then Spark reaches it.  Under Spark
    Connect the driver (its filesystem and its settings) is the server's, so even
    a plain path is only reachable through Spark.
    """
    try:
        context = spark.sparkContext
    except Exception:
        return None
    local = local_folder(location)
    if local is not None:
        return TableFolder(local)
    hadoop = context._jsc.hadoopConfiguration()
    if store_refusal(location, hadoop.get):
        return None  # credentials only Spark's connector can get: the table is Spark's
    folder = store_folder(location, hadoop.get)
    if folder is not None and folder.store is not None:
        register_secrets(folder.store.secrets)
    return folder


def _store_refusal(spark: SparkSession, location: str) -> str | None:
    """:func:`store_refusal` of an object-store ``location`` in the session's settings
    (none under Spark Connect, where nothing reaches them)."""
    try:
        context = spark.sparkContext
    except Exception:
        return None
    return store_refusal(location, context._jsc.hadoopConfiguration().get)


def _tagged_in(commits: list[dict[str, Any]], marker: CommitMarker, any_run: bool = False,
               ) -> tuple[int, Mapping[str, str], str, str] | None:
    """:func:`_tagged_commit` over commits delta-rs read from the log, newest first."""
    for commit in commits:
        tag = commit.get("userMetadata")
        try:
            document = json.loads(tag) if isinstance(tag, str) else None
        except ValueError:
            continue
        ours = document.get("headwater") if isinstance(document, dict) else None
        if (isinstance(ours, dict)
                and (any_run or ours.get("run_id") == marker.run_id)
                and ours.get("stream") == marker.stream
                and str(ours.get("checkpoint")) == str(marker.checkpoint_index)):
            metrics = commit.get("operationMetrics") or {}
            return (int(commit["version"]), {k: str(v) for k, v in metrics.items()},
                    str(tag), str(commit.get("engineInfo") or ""))
    return None


#: ``writer_reason`` of a checkpoint whose commit an earlier attempt made.
_EARLIER_ATTEMPT = "committed by an earlier attempt (found in the table's history)"


def _writer_of(engine_info: str) -> str | None:
    """The writer named by a commit's ``engineInfo`` (delta-rs or Spark), None if neither."""
    if engine_info.startswith("delta-rs"):
        return WRITER_TASKS
    if engine_info.startswith("Apache-Spark"):
        return WRITER_SPARK
    return None


def _unreadable(exc: BaseException) -> _Choice:
    """Spark writes a table whose log delta-rs cannot load (its error, first line)."""
    first_line = (str(exc).strip().splitlines() or [""])[0]
    return _Choice(None, f"delta-rs cannot read the table's log ({type(exc).__name__}: "
                         f"{first_line})")


def nested_additions(wanted: Iterable[StructField], existing: Mapping[str, StructField],
                     ) -> list[tuple[list[str], DataType]]:
    """Fields a struct column (or a list of structs) gained: ``(path, Spark type)`` each.

    A later sync's objects may carry a field the table's struct lacks; the
    table's struct gets it (``ALTER TABLE ... ADD COLUMNS (s.new ...)``, a list's
    items are ``s.element``), so its values land instead of becoming notes.  A
    field whose type changed keeps the table's type, as top-level columns do.
    """
    from pyspark.sql.types import ArrayType, StructType

    found: list[tuple[list[str], DataType]] = []

    def walk(path: list[str], want: DataType, have: DataType) -> None:
        if isinstance(want, StructType) and isinstance(have, StructType):
            had = {f.name: f.dataType for f in have.fields}
            for field in want.fields:
                if field.name in had:
                    walk([*path, field.name], field.dataType, had[field.name])
                else:
                    found.append(([*path, field.name], field.dataType))
        elif isinstance(want, ArrayType) and isinstance(have, ArrayType):
            walk([*path, "element"], want.elementType, have.elementType)

    for field in wanted:
        if field.name in existing:
            walk([field.name], field.dataType, existing[field.name].dataType)
    return found


def _table_types(data_schema: pa.Schema, existing: Mapping[str, StructField]) -> pa.Schema:
    """``data_schema`` with each column the table already has typed as the table types it.

    A column of JSON text stays JSON text: VARIANT where the table's column is a
    VARIANT (whatever the stream asks now), text where it is a string (a table
    made before VARIANT, or with ``json_columns``), so the table's type wins.
    """
    from pyspark.sql.pandas.types import to_arrow_type
    from pyspark.sql.types import StringType, VariantType

    fields = []
    for field in data_schema:
        table_type = existing[field.name].dataType if field.name in existing else None
        if isinstance(table_type, VariantType) or (
                json_kind(field) is not None and isinstance(table_type, StringType)):
            kind = VARIANT if isinstance(table_type, VariantType) else JSON_TEXT
            fields.append(pa.field(field.name, pa.string(), metadata={LOGICAL_KEY: kind}))
        elif field.name in existing:
            fields.append(pa.field(
                field.name, to_arrow_type(existing[field.name].dataType, timezone="UTC")))
        else:
            fields.append(field)
    return pa.schema(fields)


def _create_table(spark: SparkSession, location: str, schema: StructType,
                  layout: TableLayout) -> None:
    """Create the stream's table through Spark: empty, with ``schema``, laid out as ``layout``.

    Without a layout, an empty append (the table's first commit, as a first
    write makes it); with one, ``CREATE TABLE ... AS SELECT`` (``_sql.create_table``
    says why).  Either way the table lists its statistics columns, as Delta
    requires: a clustered table's list names its clustering columns, a
    partitioned table's leaves its partition columns out (their values are in
    the log, not in the files).
    """
    if layout.is_default:
        spark.createDataFrame([], schema).write.format("delta").mode("append").option(
            STATS_PROPERTY, stats_columns(schema)).save(location)
        return
    listed = stats_columns([f for f in schema if f.name not in layout.partition_by])
    properties = {STATS_PROPERTY: with_columns(listed, layout.cluster_by),
                  **layout.properties}
    _sql.create_table(spark, location, spark.createDataFrame([], schema),
                      partition_by=layout.partition_by, cluster_by=layout.cluster_by,
                      properties=properties)


def _properties_to_set(layout: TableLayout, properties: Mapping[str, str]) -> dict[str, str]:
    """The stream's table properties the table lacks or holds with another value."""
    return {k: v for k, v in layout.properties.items() if properties.get(k) != v}


def _report_layout(plan: StreamPlan, location: str, table: _sql.TableDetail) -> None:
    """Warn when an existing table is partitioned or clustered otherwise than the stream asks.

    Not changed by the sync: re-partitioning rewrites every file of the table,
    and even a clustering change (``ALTER TABLE ... CLUSTER BY``) decides how
    every later write lays out its files, so it is the table owner's call.  A
    stream that names neither ``partition_by`` nor ``cluster_by`` asks nothing.
    """
    layout = plan.stream.table_layout
    if not (layout.partition_by or layout.cluster_by):
        return
    if (tuple(table.partition_columns) == tuple(layout.partition_by)
            and tuple(table.clustering_columns) == tuple(layout.cluster_by)):
        return
    log.warning(
        "stream %s: the Delta table at %s is %s, and the stream asks for %s; an existing "
        "table's layout is not changed by a sync (to change it, re-create the table, or "
        "ALTER TABLE ... CLUSTER BY for clustering)", plan.stream.name, location,
        _layout_words(table.partition_columns, table.clustering_columns),
        _layout_words(layout.partition_by, layout.cluster_by, asked=True))


def _layout_words(partition_by: Sequence[str], cluster_by: Sequence[str], *,
                  asked: bool = False) -> str:
    """A layout in words: ``partitioned by (a, b)``, ``clustered by (c)``, or neither."""
    if partition_by:
        return (f"partition_by [{', '.join(partition_by)}]" if asked
                else f"partitioned by ({', '.join(partition_by)})")
    if cluster_by:
        return (f"cluster_by [{', '.join(cluster_by)}]" if asked
                else f"clustered by ({', '.join(cluster_by)})")
    return "neither partitioned nor clustered"


def _bytes_written(metrics: Mapping[str, str]) -> int:
    # WRITE reports numOutputBytes; MERGE reports the bytes of the files it added.
    return int(metrics.get("numOutputBytes") or metrics.get("numTargetBytesAdded") or 0)


def _sql_text(text: str) -> str:
    """``text`` inside a single-quoted SQL string literal."""
    return text.replace("\\", "\\\\").replace("'", "\\'")


def _failed(what: str, exc: BaseException, stream: str) -> DestinationError:
    """``what``, then the Spark error's type and first line (its JVM stack trace stays out)."""
    return DestinationError(f"{what}: {_error_line(exc)}", stream=stream)


def _error_line(exc: BaseException) -> str:
    """The error's type and first line (a Spark error's JVM stack trace stays out)."""
    text = str(exc).strip()
    first_line = text.splitlines()[0] if text else ""
    cause = _jvm_root_cause(exc)
    if cause:  # py4j's own first line only names the call ("... calling o728.save.")
        first_line = f"{first_line} {cause}".strip()
    return f"{type(exc).__name__}: {first_line}"


def _jvm_root_cause(exc: BaseException) -> str:
    """The first line of the innermost JVM exception behind a py4j error ("" if none).

    A write Spark's writer refuses (a CHECK constraint, say) fails inside a job, and
    the reason is the cause of the cause of the error the driver's call raised.
    """
    java = getattr(exc, "java_exception", None)
    if java is None:
        return ""
    try:
        while java.getCause() is not None:
            java = java.getCause()
        return (str(java.toString()).strip().splitlines() or [""])[0]
    except Exception:  # the JVM is gone, or the object is not a Throwable
        return ""


__all__ = ["DeltaDestination"]
