"""PostgreSQL destination: one table per stream, each checkpoint landed exactly once.

Guarantee: exactly once.  A checkpoint's rows go from the executors into an
UNLOGGED staging table of its own with binary COPY (``_copy.py``: never a row
at a time, never through the driver); then one PostgreSQL transaction on the
driver moves them into the stream's table and inserts the checkpoint's marker
into ``_headwater.commit_markers`` (``_owned.py``), and drops the staging.  The
marker and the rows land together or not at all, so a resumed attempt that
finds the marker skips the checkpoint, and ``find_commit`` asks the database,
never the metadata store.

Sync modes (``_moves.py``): append; incremental append; append_dedup (``INSERT
... ON CONFLICT`` on the primary key, the newest cursor wins, ties as in
Delta); overwrite, whose checkpoints are staged and published in one
transaction at the end of the run (``DELETE`` then ``INSERT``), so readers see
the old rows until the new ones are all there.  A replay replaces one run's
rows in one transaction.

Tables: ``_tables.py`` (create, ``ALTER TABLE ... ADD COLUMN``, a table
Headwater did not create refused unless it fits); values PostgreSQL refuses are
noted per row on the executors (``_fit.py``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import psycopg
import pyarrow as pa

from headwater._events import commit_landed
from headwater.destinations._base import (
    CommitMarker,
    CommitResult,
    Destination,
    DestinationCapabilities,
    PublishMarker,
)
from headwater.destinations._deletes import deleted_column
from headwater.destinations._history_rule import HISTORY_FIELDS
from headwater.destinations.postgres import _config, _history, _moves, _owned
from headwater.destinations.postgres._check import check_server, check_stream_tables
from headwater.destinations.postgres._config import MAX_IDENTIFIER
from headwater.destinations.postgres._connect import connect, explain, is_connection_lost
from headwater.destinations.postgres._copy import (
    FIGURES,
    TASK_COLUMN,
    CopyTask,
    StagingWriter,
    quoted,
)
from headwater.destinations.postgres._errors import error_line, job_error
from headwater.destinations.postgres._fit import Column
from headwater.destinations.postgres._tables import (
    columns_of,
    ensure_key,
    prepare_table,
    qualified,
)
from headwater.errors import (
    CommitOutcomeUnknownError,
    DestinationError,
    HeadwaterError,
    StoreBehindTableError,
)
from headwater.sync_modes import DestinationSyncMode

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from headwater.plan import CheckpointPlan, StreamPlan

log = logging.getLogger(__name__)

#: ``CommitResult.writer``: the executors' binary COPY, moved by the driver's transaction.
WRITER = "copy+transaction"
_WHY = "executors COPY (binary) into staging; one transaction moves the rows with the marker"

Move = Callable[[psycopg.Connection[Any], str, list[str]], object]


class PostgresDestination(Destination):
    type_name = "postgres"
    guarantee = "exactly-once"
    capabilities = DestinationCapabilities(
        sync_modes=("overwrite", "append", "append_dedup", "history"),
        # A history commit reads the key's versions the one before it wrote: one lane.
        max_concurrent_commits={DestinationSyncMode.HISTORY: 1},
        task_written_files=True,
        stages_overwrites=True,
        replaces_run_rows=True,
        clusters_tables=False,
        partitions_tables=False,
        keeps_table_properties=False,
        commit_id="postgres_txid",
    )

    @classmethod
    def spec(cls) -> dict[str, Any]:
        return _config.spec()

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        self.settings = _config.parse(self.config)
        self.schema = self.settings.schema_name
        #: Per stream, the columns its COPY writes (set by ``prepare``; each stream's
        #: thread reads and writes only its own entry).
        self._columns: dict[str, list[Column]] = {}
        self._unwritten: dict[str, list[str]] = {}
        #: Staging tables ``before_task_files`` created for a job run ahead of its commit
        #: (each name is one table's, run's and checkpoint's: only its lane touches it).
        self._ready: set[str] = set()

    # ------------------------------------------------------------------ naming

    def table_location(self, stream: str) -> str:
        return f"{self.schema}.{stream}"

    def _target(self, stream: str) -> str:
        return qualified(self.schema, stream)

    def dataset_namespace(self) -> str:
        """``postgres://host:port/database``: the server and database, no credential."""
        return f"postgres://{self.settings.host}:{self.settings.port}/{self.settings.database}"

    # ------------------------------------------------------------------ checks

    def check(self) -> None:
        """Reachable, the credentials taken, and the role may create tables in the schema
        (and Headwater's own schemas); creates nothing, starts no Spark."""
        check_server(self.settings)

    def check_tables(self, streams: Mapping[str, pa.Schema]) -> None:
        check_stream_tables(self.settings, streams)

    def table_columns(self, stream: str, spark: SparkSession | None = None) -> pa.Schema | None:
        """The table's columns from PostgreSQL's catalog (jsonb as JSON text marked VARIANT)."""
        try:
            with connect(self.settings, autocommit=True, stream=stream) as conn:
                columns = columns_of(conn, self.schema, stream)
        except psycopg.Error as exc:
            raise explain(exc, self.settings, stream=stream) from exc
        return pa.schema([c.arrow_field() for c in columns]) if columns else None

    # ------------------------------------------------------------------ preparing

    def prepare(self, spark: SparkSession, plan: StreamPlan, data_schema: pa.Schema) -> pa.Schema:
        stream = plan.stream.name
        if len(stream.encode()) > MAX_IDENTIFIER:
            raise DestinationError(f"stream name {stream!r} is longer than PostgreSQL's "
                                   f"{MAX_IDENTIFIER}-byte table names", stream=stream)
        if plan.stream.table_layout.partition_by or plan.stream.table_layout.cluster_by:
            raise DestinationError("the postgres destination does not partition or cluster "
                                   "tables (table_layout)", stream=stream)
        try:
            with connect(self.settings, autocommit=True, stream=stream) as conn, \
                    conn.transaction():
                _owned.ensure(conn)
                history = plan.stream.destination_sync_mode is DestinationSyncMode.HISTORY
                prepared, columns, unwritten = prepare_table(
                    conn, self.schema, stream, data_schema, stream,
                    extra=HISTORY_FIELDS if history else ())
                if plan.stream.destination_sync_mode is DestinationSyncMode.APPEND_DEDUP:
                    ensure_key(conn, self.schema, stream, plan.stream.primary_key, stream)
        except HeadwaterError:
            raise
        except psycopg.Error as exc:
            raise explain(exc, self.settings, stream=stream) from exc
        self._columns[stream] = columns
        self._unwritten[stream] = unwritten
        return prepared

    def unwritten_columns(self, stream: str) -> list[str]:
        return list(self._unwritten.get(stream, ()))

    # ------------------------------------------------------------------ commits

    def find_commit(self, spark: SparkSession, plan: StreamPlan,
                    marker: CommitMarker) -> CommitResult | None:
        return self._find(plan.stream.name, marker, _owned.COMMIT)

    def commit(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
               rows: DataFrame, marker: CommitMarker) -> CommitResult:
        target = self._target(plan.stream.name)
        mode = plan.stream.destination_sync_mode
        first = checkpoint.index == plan.checkpoints[0].index
        partition_order = [p.id for p in checkpoint.partitions]

        stream = plan.stream
        flag = deleted_column(self._column_names(stream.name))
        cursor_type = next((c.pg_type for c in self._columns_of(stream.name)
                            if c.name == stream.cursor_field), None)

        def move(conn: psycopg.Connection[Any], staging: str, names: list[str]) -> object:
            if mode is DestinationSyncMode.HISTORY:
                return _history.apply(conn, target, staging, names, stream.primary_key,
                                      stream.cursor_field, cursor_type, flag, partition_order,
                                      plan.planned_at)
            if mode is DestinationSyncMode.APPEND_DEDUP:
                return _moves.upsert(conn, target, staging, names, stream.primary_key,
                                     stream.cursor_field, partition_order,
                                     flag if stream.deletes == "hard" else None)
            if mode is DestinationSyncMode.OVERWRITE and first:
                _moves.delete_all(conn, target)
            return _moves.insert(conn, target, staging, names)

        return self._land(spark, plan, rows, marker, _owned.COMMIT, move)

    def file_writer(self, spark: SparkSession, plan: StreamPlan, *,
                    run_id: str = "") -> StagingWriter | None:
        """The reading tasks COPY their rows themselves (``_copy.StagingWriter``).

        None under Spark Connect: there a stream that keeps its own state carries it in
        state rows among its records, which the engine splits off before a commit sees
        the rows; the rows then reach PostgreSQL through :meth:`commit`'s own COPY job.
        """
        try:
            spark.sparkContext  # noqa: B018 (Spark Connect has none)
        except Exception:
            return None
        stream = plan.stream.name
        return StagingWriter(self.settings, self._target(stream),
                             tuple(self._columns_of(stream)))

    def commit_files(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
                     files: DataFrame, marker: CommitMarker) -> CommitResult:
        """:meth:`commit`, the tasks having COPYed the rows (``files``: their figures)."""
        return self.commit(spark, plan, checkpoint, files, marker)

    def stage_files(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
                    files: DataFrame, marker: CommitMarker) -> CommitResult:
        return self.stage(spark, plan, checkpoint, files, marker)

    def replace_run(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
                    rows: DataFrame, marker: CommitMarker, *,
                    replaced_run_id: str) -> CommitResult:
        """Delete run ``replaced_run_id``'s rows and insert ``rows``, in one transaction."""
        target = self._target(plan.stream.name)
        if plan.stream.destination_sync_mode is DestinationSyncMode.OVERWRITE:
            with connect(self.settings, autocommit=True, stream=marker.stream) as conn:
                other = conn.execute(f"SELECT 1 FROM {target} WHERE _hw_run_id <> %s LIMIT 1",
                                     [replaced_run_id]).fetchone()
            if other is not None:
                raise DestinationError(
                    f"table {self.table_location(plan.stream.name)} was overwritten by a later "
                    f"full refresh, so run {replaced_run_id}'s rows are no longer its content: "
                    "replaying it would mix two generations of the table; sync it again "
                    "instead", stream=marker.stream)

        def move(conn: psycopg.Connection[Any], staging: str, names: list[str]) -> object:
            _moves.delete_run(conn, target, replaced_run_id)
            return _moves.insert(conn, target, staging, names)

        return self._land(spark, plan, rows, marker, _owned.COMMIT, move)

    def _land(self, spark: SparkSession, plan: StreamPlan, rows: DataFrame,
              marker: CommitMarker, kind: str, move: Move | None) -> CommitResult:
        """Stage the rows (executors), then one transaction: move, marker, staging dropped.

        A marker already there (a retried checkpoint whose lookup the caller skipped)
        is the answer, and nothing runs; ``move`` None keeps the rows staged (``stage``).
        """
        stream = plan.stream.name
        columns = self._columns_of(stream)
        target = self._target(stream)
        staging = _owned.staging_name(target, marker.run_id, marker.checkpoint_index)
        ready = staging in self._ready
        self._ready.discard(staging)
        found = self._find(stream, marker, kind)
        if found is not None:
            if ready:  # the tasks COPYed into it already: their rows are not needed
                self._drop_staging(staging, marker)
            return found
        if not ready:
            self._create_staging(staging, target, columns, marker)
        began = time.monotonic()
        figures = self._copy(rows, staging, columns, marker)
        staged = time.monotonic()
        names = [c.name for c in columns]
        what = (f"{'staging' if move is None else 'commit of'} checkpoint "
                f"{marker.checkpoint_index} to {self.table_location(stream)}")
        try:
            with connect(self.settings, autocommit=True, stream=stream) as conn, \
                    conn.transaction():
                if move is not None:
                    move(conn, staging, names)
                txid = _owned.insert(conn, target, kind, app_id=marker.app_id,
                                     version=marker.version, run_id=marker.run_id,
                                     stream=stream, checkpoint=marker.checkpoint_index,
                                     tag=marker.tag, figures=figures)
                if move is not None:
                    _owned.drop_staging(conn, staging)
        except Exception as exc:
            return self._after_error(exc, marker, kind, what)
        if move is not None:
            commit_landed()
        log.info("stream %s checkpoint %s: %s rows COPYed into staging in %.1fs, %s in %.1fs",
                 stream, marker.checkpoint_index, figures[0], staged - began,
                 "kept staged" if move is None else "moved into the table",
                 time.monotonic() - staged)
        rows_, rejected, size = figures
        return CommitResult(rows=rows_, rejected=rejected, bytes=size,
                            version=txid if move is not None else None,
                            writer=WRITER, writer_reason=_WHY)

    def before_task_files(self, spark: SparkSession, plan: StreamPlan,
                          checkpoint: CheckpointPlan, marker: CommitMarker) -> bool:
        """Create the checkpoint's staging now: the engine runs the COPYing tasks before
        the commit (which finds it ready, and drops it whether or not rows came)."""
        target = self._target(plan.stream.name)
        staging = _owned.staging_name(target, marker.run_id, marker.checkpoint_index)
        self._create_staging(staging, target, self._columns_of(plan.stream.name), marker)
        self._ready.add(staging)
        return True

    def _drop_staging(self, staging: str, marker: CommitMarker) -> None:
        with connect(self.settings, autocommit=True, stream=marker.stream) as conn, \
                conn.transaction():
            _owned.drop_staging(conn, staging)

    def delete_checkpoints(self, spark: SparkSession, stream: str, run_id: str,
                           checkpoints: Sequence[int]) -> int:
        with connect(self.settings, autocommit=True, stream=stream) as conn, \
                conn.transaction():
            return conn.execute(f"DELETE FROM {self._target(stream)} WHERE _hw_run_id = %s "
                                "AND _hw_checkpoint = ANY(%s)",
                                [run_id, list(checkpoints)]).rowcount

    def _column_names(self, stream: str) -> list[str]:
        return [c.name for c in self._columns_of(stream)]

    def _columns_of(self, stream: str) -> list[Column]:
        columns = self._columns.get(stream)
        if columns is None:
            raise DestinationError("the postgres destination was asked to commit before "
                                   "preparing the stream's table", stream=stream)
        return columns

    def _create_staging(self, staging: str, target: str, columns: list[Column],
                        marker: CommitMarker) -> None:
        """The checkpoint's staging table, empty (an earlier attempt's is dropped first)."""
        definitions = ", ".join(f"{quoted(c.name)} {c.pg_type}" for c in columns)
        try:
            with connect(self.settings, autocommit=True, stream=marker.stream) as conn, \
                    conn.transaction():
                conn.execute(f"DROP TABLE IF EXISTS {staging}")
                conn.execute(f"CREATE UNLOGGED TABLE {staging} ({definitions}, "
                             f"{TASK_COLUMN} integer NOT NULL)")
                _owned.register_staging(conn, staging, target, marker.app_id, marker.version,
                                        marker.run_id)
        except psycopg.Error as exc:
            raise explain(exc, self.settings, stream=marker.stream) from exc

    def _copy(self, rows: DataFrame, staging: str, columns: list[Column],
              marker: CommitMarker) -> tuple[int, int, int]:
        """Run the checkpoint's Spark job: each task COPYs its rows into ``staging``.

        ``rows`` are the rows themselves (a replay), or already the figures of the tasks
        that COPY as they read (``file_writer``): then the job is just collected.
        """
        from pyspark.sql.pandas.types import from_arrow_schema

        task = CopyTask(self.settings, staging, tuple(columns))
        try:
            figures = (rows if rows.columns == FIGURES.names else
                       rows.mapInArrow(task, from_arrow_schema(FIGURES))).collect()
        except Exception as exc:
            raise job_error(f"staging checkpoint {marker.checkpoint_index} of "
                            f"{self.table_location(marker.stream)}", exc, marker.stream) from exc
        return (sum(int(f["rows"]) for f in figures), sum(int(f["rejected"]) for f in figures),
                sum(int(f["bytes"]) for f in figures))

    def _find(self, stream: str, marker: CommitMarker, kind: str) -> CommitResult | None:
        try:
            with connect(self.settings, autocommit=True, stream=stream) as conn:
                found = _owned.find(conn, self._target(stream), marker.app_id, marker.version,
                                    kind)
        except psycopg.errors.UndefinedTable:
            return None  # no marker table yet: nothing landed
        if found is None:
            return None
        return self._landed(found, marker, already_committed=True)

    def _landed(self, found: _owned.Marker, marker: CommitMarker, *,
                already_committed: bool) -> CommitResult:
        if found.run_id != marker.run_id:
            raise StoreBehindTableError(
                f"the metadata store is behind the table: checkpoint {marker.checkpoint_index} "
                f"of run {marker.run_id} got version {marker.version} of {marker.app_id}, and "
                f"{self.table_location(marker.stream)}'s markers already hold it, committed by "
                f"run {found.run_id}; nothing was committed. The store was restored from an "
                "older copy (or lost writes): run `headwater state realign CONNECTION.yaml`, "
                "then sync again", stream=marker.stream)
        return CommitResult(rows=found.rows, rejected=found.rejected, bytes=found.bytes,
                            version=found.txid if found.checkpoint is not None else None,
                            already_committed=already_committed,
                            partition_states=found.partition_states, writer=WRITER,
                            writer_reason="committed by an earlier attempt (found by its "
                            "marker)" if already_committed else _WHY)

    def _after_error(self, exc: BaseException, marker: CommitMarker, kind: str,
                     what: str) -> CommitResult:
        """A commit transaction that raised: landed after all (its marker is there), or not.

        A lost connection may come after the server committed; a marker of the same
        pair may have been inserted by a racing attempt.  So the marker table
        decides; a lookup that cannot answer leaves the outcome unknown, and the
        engine keeps the run resumable.
        """
        if isinstance(exc, HeadwaterError):
            raise exc  # connecting failed: nothing ran
        try:
            with connect(self.settings, autocommit=True, stream=marker.stream) as conn:
                found = _owned.find(conn, self._target(marker.stream), marker.app_id,
                                    marker.version, kind)
        except Exception as lookup:
            if is_connection_lost(exc):
                raise CommitOutcomeUnknownError(what, error=error_line(exc),
                                                lookup=error_line(lookup), stream=marker.stream,
                                                checkpoint=marker.checkpoint_index) from exc
            # An error the server answered with: its transaction rolled back.
            raise DestinationError(f"{what} failed: {error_line(exc)}",
                                   stream=marker.stream) from exc
        if found is None:
            raise DestinationError(f"{what} failed: {error_line(exc)}",
                                   stream=marker.stream) from exc
        log.warning("%s raised, and its marker is in the table's markers, so it counts as "
                    "committed: %s", what, error_line(exc))
        return self._landed(found, marker, already_committed=False)

    def abort(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
              marker: CommitMarker) -> None:
        """Drop the checkpoint's staging, unless its marker says it landed (or is staged)."""
        target = self._target(plan.stream.name)
        staging = _owned.staging_name(target, marker.run_id, marker.checkpoint_index)
        with connect(self.settings, autocommit=True, stream=marker.stream) as conn, \
                conn.transaction():
            for kind in (_owned.COMMIT, _owned.STAGED):
                if _owned.find(conn, target, marker.app_id, marker.version, kind) is not None:
                    return
            _owned.drop_staging(conn, staging)

    # ------------------------------------------- overwrites: staged, then published

    def stage(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
              rows: DataFrame, marker: CommitMarker) -> CommitResult:
        """COPY the checkpoint into its staging and mark it staged; the table is untouched."""
        return self._land(spark, plan, rows, marker, _owned.STAGED, None)

    def find_staged(self, spark: SparkSession, plan: StreamPlan,
                    marker: CommitMarker) -> CommitResult | None:
        """The staged marker, if its staging still holds its rows (an UNLOGGED table is
        emptied when the server crashes: then the marker goes and it is staged again)."""
        found = self._find(plan.stream.name, marker, _owned.STAGED)
        if found is None:
            return None
        target = self._target(plan.stream.name)
        staging = _owned.staging_name(target, marker.run_id, marker.checkpoint_index)
        with connect(self.settings, autocommit=True, stream=marker.stream) as conn:
            exists = conn.execute("SELECT to_regclass(%s)", [staging]).fetchone() != (None,)
            held = conn.execute(f"SELECT count(*) FROM {staging}").fetchone() if exists else None
            if held is not None and int(held[0]) == found.rows:
                return found
            conn.execute(f"DELETE FROM {_owned.MARKERS} WHERE target = %s AND app_id = %s AND "
                         "version = %s AND kind = %s",
                         [target, marker.app_id, marker.version, _owned.STAGED])
        log.warning("stream %s checkpoint %s: its staging lost its rows (a server restart "
                    "empties UNLOGGED tables); staged again", marker.stream,
                    marker.checkpoint_index)
        return None

    def publish(self, spark: SparkSession, plan: StreamPlan,
                marker: PublishMarker) -> CommitResult:
        """One transaction: the table's rows deleted, every staged checkpoint inserted, the
        publish's marker; then the run's staging goes."""
        stream = plan.stream.name
        target = self._target(stream)
        names = [c.name for c in self._columns_of(stream)]
        as_commit = CommitMarker(app_id=marker.app_id, version=marker.version,
                                 run_id=marker.run_id, stream=stream, checkpoint_index=-1)
        found = self._find(stream, as_commit, _owned.PUBLISH)
        if found is not None:
            return found
        what = f"publishing run {marker.run_id} to {self.table_location(stream)}"
        try:
            with connect(self.settings, autocommit=True, stream=stream) as conn, \
                    conn.transaction():
                staged = self._staged(conn, target, marker)
                _moves.delete_all(conn, target)
                for staging in staged.values():
                    _moves.insert(conn, target, staging, names)
                figures = conn.execute(
                    f"SELECT coalesce(sum(rows), 0), coalesce(sum(rejected), 0), "
                    f"coalesce(sum(bytes), 0) FROM {_owned.MARKERS} WHERE target = %s AND "
                    "kind = %s AND run_id = %s AND checkpoint = ANY(%s)",
                    [target, _owned.STAGED, marker.run_id, list(marker.checkpoints)]).fetchone()
                counts = (int(figures[0]), int(figures[1]), int(figures[2])) if figures \
                    else (0, 0, 0)
                txid = _owned.insert(conn, target, _owned.PUBLISH, app_id=marker.app_id,
                                     version=marker.version, run_id=marker.run_id,
                                     stream=stream, checkpoint=None, tag=marker.tag,
                                     figures=counts)
                for staging in staged.values():
                    _owned.drop_staging(conn, staging)
                conn.execute(f"DELETE FROM {_owned.MARKERS} WHERE target = %s AND kind = %s "
                             "AND run_id = %s", [target, _owned.STAGED, marker.run_id])
        except DestinationError:
            raise
        except Exception as exc:
            return self._after_error(exc, as_commit, _owned.PUBLISH, what)
        commit_landed()
        return CommitResult(rows=counts[0], rejected=counts[1], bytes=counts[2], version=txid,
                            writer=WRITER, writer_reason=_WHY)

    def _staged(self, conn: psycopg.Connection[Any], target: str,
                marker: PublishMarker) -> dict[int, str]:
        """The run's staging table of each checkpoint, in order; refuses a missing one."""
        rows = conn.execute(
            f"SELECT m.checkpoint, s.name FROM {_owned.MARKERS} m JOIN {_owned.STAGING} s "
            "ON s.target = m.target AND s.app_id = m.app_id AND s.version = m.version "
            "WHERE m.target = %s AND m.kind = %s AND m.run_id = %s AND m.checkpoint = ANY(%s)",
            [target, _owned.STAGED, marker.run_id, list(marker.checkpoints)]).fetchall()
        staged = {int(c): str(n) for c, n in rows}
        missing = [i for i in marker.checkpoints if i not in staged]
        if missing:
            raise DestinationError(f"cannot publish run {marker.run_id}: checkpoints {missing} "
                                   "are not staged; nothing changed", stream=marker.stream)
        return {i: staged[i] for i in sorted(staged)}

    def clear_staging(self, spark: SparkSession, plan: StreamPlan, *, keep_run_id: str) -> None:
        """Drop what other runs staged for this table (and their staged markers)."""
        target = self._target(plan.stream.name)
        with connect(self.settings, autocommit=True, stream=plan.stream.name) as conn, \
                conn.transaction():
            for name, _, _, run_id in _owned.staging_of(conn, target, other_than_run=keep_run_id):
                _owned.drop_staging(conn, name)
                conn.execute(f"DELETE FROM {_owned.MARKERS} WHERE target = %s AND kind = %s "
                             "AND run_id = %s", [target, _owned.STAGED, run_id])

    # ----------------------------------------------------------------- realigning

    def lane_versions(self, spark: SparkSession, stream: str,
                      app_id_prefix: str) -> dict[str, int]:
        with connect(self.settings, autocommit=True, stream=stream) as conn:
            try:
                return _owned.lane_versions(conn, self._target(stream), app_id_prefix)
            except psycopg.errors.UndefinedTable:
                return {}

    def read_table(self, spark: SparkSession, stream: str,
                   columns: Sequence[str] | None = None) -> DataFrame:
        """The table's rows, read by Spark's tasks with ADBC, a range of pages each
        (``_read.py``), only ``columns``."""
        from headwater.destinations.postgres._read import read_frame

        return read_frame(spark, self.settings, stream, columns)

    def run_row_counts(self, spark: SparkSession, stream: str) -> dict[str, int]:
        with connect(self.settings, autocommit=True, stream=stream) as conn:
            rows = conn.execute(f"SELECT _hw_run_id, count(*) FROM {self._target(stream)} "
                                "GROUP BY _hw_run_id").fetchall()
        return {str(r): int(n) for r, n in rows}

    def delete_runs(self, spark: SparkSession, stream: str, run_ids: list[str]) -> int:
        with connect(self.settings, autocommit=True, stream=stream) as conn, \
                conn.transaction():
            return conn.execute(f"DELETE FROM {self._target(stream)} WHERE _hw_run_id = ANY(%s)",
                                [run_ids]).rowcount


__all__ = ["WRITER", "PostgresDestination"]
