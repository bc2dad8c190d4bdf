"""Delta Lake destination: one table per stream, one idempotent commit per checkpoint.

Guarantee: exactly once.  Every commit carries Delta's idempotent-write pair
``txnAppId``/``txnVersion`` (the checkpoint's lane and global index), so a
checkpoint re-executed after a crash is skipped by Delta itself; the commit
also carries a ``userMetadata`` tag that lets a resumed attempt find out, before
reading anything, that a killed attempt's commit already landed.

Sync modes:

* ``overwrite``: the run's first checkpoint replaces the table's rows, the
  others append (readers see the new generation grow during the run; the
  previous one stays readable by time travel).
* ``append``: every checkpoint appends.
* ``append_dedup``: every checkpoint is MERGEd on the primary key; the row with
  the latest cursor wins (ties: the later checkpoint, then the later record).

Two ways to write (``writer`` in the config):

* ``auto`` (the default): on classic Spark, ``append`` and ``overwrite`` tables in a
  local folder are written by the tasks themselves (pyarrow, ``_files.py``) and
  committed through delta-rs (``_delta_rs.py``), with the same ``txn`` pair and
  tag; everything else goes through Spark's Delta writer.
* ``spark``: always Spark's Delta writer.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from headwater.destinations._base import (
    CommitMarker,
    CommitResult,
    Destination,
    tagged_counts,
    tagged_partition_states,
)
from headwater.destinations.delta import _delta_rs, _table_facts
from headwater.destinations.delta._delta_rs import local_folder
from headwater.destinations.delta._files import ParquetFiles
from headwater.destinations.delta._sql import (
    history,
    is_delta_table,
    merge,
    quote,
    table_properties,
    table_ref,
)
from headwater.destinations.delta._stats import (
    STATS_META_COLUMNS,
    STATS_PROPERTY,
    listed_columns,
    stats_columns,
)
from headwater.errors import DestinationError, StoreBehindTableError
from headwater.table_schema import META_FIELDS

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.types import StructField

    from headwater.engine._plan import CheckpointPlan, StreamPlan

log = logging.getLogger(__name__)

#: Commits a just-made commit is looked for among: lanes commit side by side.
_RECENT_COMMITS = 50

#: MERGE takes its idempotency keys and commit tag from *session* confs, which
#: every thread of this process shares; this lock keeps one MERGE's confs from
#: leaking into another's commit.
_MERGE_CONF_LOCK = threading.Lock()
_TXN_APP_CONF = "spark.databricks.delta.write.txnAppId"
_TXN_VERSION_CONF = "spark.databricks.delta.write.txnVersion"
_USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"


class DeltaDestination(Destination):
    type_name = "delta"
    guarantee = "exactly-once"

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
                    "a local folder and the mode is append or overwrite (several times faster); "
                    "spark: always Spark's Delta writer.",
                },
            },
        }

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        root = str(self.config.get("path") or "lakehouse")
        if "://" not in root:
            root = str(Path(root).resolve())
        self.root = root.rstrip("/")
        #: The statistics columns ``prepare`` found or set, per table folder, for the
        #: ``file_writer`` call that follows it to take (once) instead of loading the
        #: table's log again.  Each stream's thread reads and writes only its own folder.
        self._prepared_stats_columns: dict[str, list[str]] = {}

    def table_location(self, stream: str) -> str:
        return f"{self.root}/{stream}"

    def _files_folder(self, spark: SparkSession, plan: StreamPlan) -> str | None:
        """The local folder tasks write this stream's files into, or None: Spark writes."""
        if self.config.get("writer", "auto") != "auto":
            return None
        if plan.stream.destination_sync_mode not in ("append", "overwrite"):
            return None  # MERGE is Spark's
        return _driver_folder(spark, self.table_location(plan.stream.name))

    def file_writer(self, spark: SparkSession, plan: StreamPlan) -> ParquetFiles | None:
        folder = self._files_folder(spark, plan)
        if folder is None:
            return None
        listed = self._prepared_stats_columns.pop(folder, None)
        if listed is None:  # prepare did not run here, or changed the table through Spark
            state = _delta_rs.table_state(folder)
            listed = listed_columns(state.properties.get(STATS_PROPERTY) if state else None)
        return ParquetFiles(folder=folder, stats_columns=listed or list(STATS_META_COLUMNS))

    # ----------------------------------------------------------------- preparing

    def prepare(self, spark: SparkSession, plan: StreamPlan, data_schema: pa.Schema) -> pa.Schema:
        from pyspark.sql.pandas.types import from_arrow_schema
        from pyspark.sql.types import StructType

        location = self.table_location(plan.stream.name)
        wanted = pa.schema(META_FIELDS + list(data_schema))
        folder = self._files_folder(spark, plan)
        try:
            if folder is not None:
                self._prepared_stats_columns.pop(folder, None)
                state = _delta_rs.table_state(folder)
                if state is None:
                    # No Spark job and no Delta-Spark code for a table the tasks will
                    # write: in a new JVM that alone was seconds of class loading.
                    listed = stats_columns(from_arrow_schema(wanted))
                    _delta_rs.create_table(folder, wanted, {STATS_PROPERTY: listed})
                    self._prepared_stats_columns[folder] = listed_columns(listed)
                    return data_schema
                existing = {f.name: f for f in StructType.fromJson(state.schema_json)}
                if all(f.name in existing for f in wanted):
                    self._prepared_stats_columns[folder] = listed_columns(
                        state.properties.get(STATS_PROPERTY))
                    return _table_types(data_schema, existing)
            properties = table_properties(spark, location)
            if properties is None:
                spark_schema = from_arrow_schema(wanted)
                spark.createDataFrame([], spark_schema).write.format("delta").mode(
                    "append").option(STATS_PROPERTY, stats_columns(spark_schema)).save(location)
                return data_schema
            existing = {f.name: f for f in spark.read.format("delta").load(location).schema}
            missing = [f for f in from_arrow_schema(wanted) if f.name not in existing]
            if missing:
                columns = ", ".join(f"{quote(f.name)} {f.dataType.simpleString()}"
                                    for f in missing)
                spark.sql(f"ALTER TABLE {table_ref(location)} ADD COLUMNS ({columns})")
                if STATS_PROPERTY in properties:
                    listed = stats_columns(missing, already=properties[STATS_PROPERTY])
                    if listed != properties[STATS_PROPERTY]:
                        spark.sql(f"ALTER TABLE {table_ref(location)} SET TBLPROPERTIES "
                                  f"('{STATS_PROPERTY}' = '{_sql_text(listed)}')")
            return _table_types(data_schema, existing)
        except Exception as exc:
            raise _failed(f"cannot prepare Delta table at {location}", exc,
                          plan.stream.name) from exc

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
                     files: DataFrame, marker: CommitMarker, *,
                     before_commit: Callable[[], None] | None = None) -> CommitResult:
        """Run the tasks (they write the files), then add the files in one delta-rs commit."""
        location = self.table_location(plan.stream.name)
        folder = local_folder(location)
        if folder is None:
            raise DestinationError(f"{location} is not a local folder", stream=marker.stream)
        first_of_run = checkpoint.index == plan.checkpoints[0].index
        mode = ("overwrite" if plan.stream.destination_sync_mode == "overwrite" and first_of_run
                else "append")
        try:
            written = [_delta_rs.WrittenFile(**row.asDict()) for row in files.collect()]
        except Exception as exc:
            raise _failed(f"writing the files of checkpoint {marker.checkpoint_index} to "
                          f"{location} failed", exc, marker.stream) from exc
        if before_commit is not None:
            before_commit()
        rows = sum(f.rows for f in written)
        rejected = sum(f.rejected for f in written)
        size = sum(f.size for f in written)
        what = f"commit of checkpoint {marker.checkpoint_index} to {location}"
        try:
            committed = _delta_rs.commit_files(folder, written, mode=mode, app_id=marker.app_id,
                                               version=marker.version,
                                               tag=marker.tag_with_counts(rows, rejected, size))
            if committed.made:
                _fault_after_commit()
        except Exception as exc:
            # delta-rs raises when its post-commit work (the log checkpoint) fails
            # after the commit file is durable: whether it landed is in the table.
            landed = _after_error(spark, location, marker, exc, what)
            return replace(landed, rows=rows, rejected=rejected, bytes=size)
        if committed.made:
            return CommitResult(rows=rows, rejected=rejected, bytes=size,
                                version=committed.version)
        # The table holds this txn version already, and the files just written stay
        # out of it.  An earlier attempt's commit is in the history, with its tag.
        found = _tagged_commit(spark, location, marker)
        if found is None:
            return _skipped(spark, location, marker, committed.held)
        return CommitResult(rows=rows, rejected=rejected, bytes=size, version=found[0],
                            already_committed=True,
                            partition_states=tagged_partition_states(found[2]))

    def commit(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
               rows: DataFrame, marker: CommitMarker) -> CommitResult:
        location = self.table_location(plan.stream.name)
        mode = plan.stream.destination_sync_mode
        first_of_run = checkpoint.index == plan.checkpoints[0].index
        try:
            if mode == "append_dedup":
                merged = self._merge(spark, plan, rows, marker, location)
                counts: Callable[[], Mapping[str, Any]] = lambda: merged  # noqa: E731
            else:
                write_mode = "overwrite" if mode == "overwrite" and first_of_run else "append"
                counts = _write(rows, marker, location, write_mode)
            return _committed(spark, location, marker, counts)
        except StoreBehindTableError:
            raise
        except Exception as exc:
            return _after_error(spark, location, marker, exc,
                                f"commit of checkpoint {marker.checkpoint_index} to {location}")

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
        if plan.stream.destination_sync_mode == "overwrite":
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

    def _merge(self, spark: SparkSession, plan: StreamPlan, rows: DataFrame,
               marker: CommitMarker, location: str) -> Mapping[str, Any]:
        """MERGE one checkpoint on the primary key; return its row and reject counts."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        keys = list(plan.stream.primary_key)
        cursor = plan.stream.cursor_field
        # Materialise the batch once: MERGE may scan its source twice, and a
        # connector read twice is both slow and possibly different.
        staged = rows.localCheckpoint(eager=True)
        # Counted on the materialised batch rather than observed: Spark Connect does
        # not report metrics observed on a plan that is local-checkpointed.
        counted = staged.agg(*_counts()).first()
        order = ([F.col(cursor).desc_nulls_last()] if cursor else []) + [
            F.col("_hw_checkpoint").desc(), F.col("_hw_raw_id").desc()]
        latest = (
            staged.withColumn("_hw_rank", F.row_number().over(
                Window.partitionBy(*[F.col(k) for k in keys]).orderBy(*order)))
            .where(F.col("_hw_rank") == 1).drop("_hw_rank")
        )
        on = " AND ".join(f"t.{quote(k)} <=> s.{quote(k)}" for k in keys)
        if cursor:
            newer = (f"t.{quote(cursor)} IS NULL OR s.{quote(cursor)} > t.{quote(cursor)} OR "
                     f"(s.{quote(cursor)} = t.{quote(cursor)} AND "
                     f"s._hw_checkpoint >= t._hw_checkpoint)")
        else:
            newer = "s._hw_checkpoint >= t._hw_checkpoint"
        with _MERGE_CONF_LOCK:
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
    _fault_after_commit()
    figures = counts()
    return CommitResult(rows=int(figures["rows"]), rejected=int(figures["rejected"]),
                        bytes=_bytes_written(found[1]), version=found[0])


def _landed(found: tuple[int, Mapping[str, str], str], *,
            already_committed: bool) -> CommitResult:
    """A commit found in the history, with the figures its metrics or its tag carry."""
    version, metrics, tag = found
    counts = tagged_counts(tag)
    rows = int(metrics.get("numOutputRows") or metrics.get("numSourceRows")
               or counts.get("rows") or 0)
    return CommitResult(rows=rows, rejected=counts.get("rejected", 0),
                        bytes=_bytes_written(metrics) or counts.get("bytes", 0),
                        version=version, already_committed=already_committed,
                        partition_states=tagged_partition_states(tag))


def _after_error(spark: SparkSession, location: str, marker: CommitMarker,
                 exc: BaseException, what: str) -> CommitResult:
    """A commit that raised: a success if it landed nonetheless, else the error.

    An error can come after the commit is durable (delta-rs's log checkpoint, a
    lost connection while the commit's answer travels back); declaring such a
    checkpoint failed would have the next run read and write its data again.
    So the table decides: the checkpoint's tagged commit in the history is a
    success, whatever came after it.
    """
    try:
        found = _tagged_commit(spark, location, marker, within_latest=_RECENT_COMMITS)
    except Exception as lookup:  # no table yet, or unreadable: nothing of ours landed
        log.debug("looking up the commit of checkpoint %s in %s failed: %s",
                  marker.checkpoint_index, location, lookup)
        found = None
    if found is None:
        raise _failed(f"{what} failed", exc, marker.stream) from exc
    log.warning("%s raised after the commit landed (version %s), so it counts as committed: "
                "%s", what, found[0], _error_line(exc))
    return _landed(found, already_committed=False)


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


def _fault_after_commit() -> None:
    """The ``raise-after-commit`` fault point (``headwater/engine/_faults.py``)."""
    from headwater.engine._faults import fault_point

    fault_point("raise-after-commit")


def _counts() -> list[Column]:
    """The figures every commit reports: rows, and rows with notes (rejected values)."""
    from pyspark.sql import functions as F

    return [F.count(F.lit(1)).alias("rows"), F.count("_hw_notes").alias("rejected")]


def _tagged_commit(spark: SparkSession, location: str, marker: CommitMarker,
                   within_latest: int | None = None, *, any_run: bool = False,
                   ) -> tuple[int, Mapping[str, str], str] | None:
    """The version, operation metrics and tag of the commit of ``marker``'s checkpoint.

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
             .select("version", "operationMetrics", "userMetadata").limit(1).collect())
    if not found:
        return None
    return (int(found[0]["version"]), found[0]["operationMetrics"] or {},
            found[0]["userMetadata"])


def _driver_folder(spark: SparkSession, location: str) -> str | None:
    """``location`` as a folder this process shares with Spark's driver, or None.

    Under Spark Connect the driver (and its filesystem) is the server's, so even a
    plain path is only reachable through Spark.
    """
    try:
        spark.sparkContext  # noqa: B018 - raises under Spark Connect
    except Exception:
        return None
    return local_folder(location)


def _tagged_in(commits: list[dict[str, Any]], marker: CommitMarker, any_run: bool = False,
               ) -> tuple[int, Mapping[str, str], str] | None:
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
                    str(tag))
    return None


def _table_types(data_schema: pa.Schema, existing: Mapping[str, StructField]) -> pa.Schema:
    """``data_schema`` with each column the table already has typed as the table types it."""
    from pyspark.sql.pandas.types import to_arrow_type

    fields = []
    for field in data_schema:
        if field.name in existing:
            fields.append(pa.field(
                field.name, to_arrow_type(existing[field.name].dataType, timezone="UTC")))
        else:
            fields.append(field)
    return pa.schema(fields)


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
    return f"{type(exc).__name__}: {text.splitlines()[0] if text else ''}"


__all__ = ["DeltaDestination"]
