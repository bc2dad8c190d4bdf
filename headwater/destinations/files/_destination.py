"""Plain files (Parquet, JSON Lines, CSV), one folder per stream, exactly once.

Guarantee: exactly once, for a reader that follows the manifests
(``_manifests.py`` says how, ``docs/destinations/files.md`` says it for readers).
The tasks write each checkpoint's files into the stream's folder, their names
carrying the run's tag (``run_file_tag``); the driver then makes them part of
the table with one manifest, created only if its number is free.  A resumed
attempt finds a landed checkpoint by its marker in the log and writes nothing
twice; files no manifest names are not the table's, and ``abort`` removes a
failed checkpoint's.

Modes: ``append`` (full refresh or incremental): one manifest per checkpoint;
``overwrite``: one checkpoint's manifest replaces the table, several are staged
(``_staging/<run>/``, out of readers' sight) and one publish manifest replaces
the table with all their files.  ``append_dedup`` is refused: files cannot
replace a row by key without rewriting the table, which readers would see
half done or which would need the table format this destination is not.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from headwater._events import commit_landed
from headwater.config import register_secrets
from headwater.destinations._base import (
    CommitMarker,
    CommitResult,
    Destination,
    DestinationCapabilities,
    FileWriter,
    PublishMarker,
)
from headwater.destinations._dataset import without_credentials
from headwater.destinations._error_line import error_line
from headwater.destinations._table_files._create import create_text
from headwater.destinations._table_files._parquet import ParquetFiles, WrittenFile
from headwater.destinations._table_files._store import (
    TableFolder,
    local_folder,
    store_folder,
    store_refusal,
)
from headwater.destinations._uncommitted import run_file_tag, run_started
from headwater.destinations.files import _config, _manifests, _text
from headwater.errors import (
    CommitOutcomeUnknownError,
    ConfigError,
    DestinationError,
    StoreBehindTableError,
)
from headwater.sync_modes import DestinationSyncMode
from headwater.table_schema import META_FIELDS, arrow_schema_for

if TYPE_CHECKING:
    from collections.abc import Callable

    from pyspark.sql import DataFrame, SparkSession

    from headwater.plan import CheckpointPlan, StreamPlan

log = logging.getLogger(__name__)

#: ``CommitResult.writer``: the tasks wrote the files, a manifest made them visible.
WRITER = "tasks+manifest"
_WRITER_REASON = "the tasks write the files; one manifest per commit lists them"
_EARLIER = "committed by an earlier attempt (found in the stream's manifests)"
_CONDITIONAL_ADVICE = ("the files destination commits each manifest with a put that must not "
                       "replace an existing one; use a store that honours If-None-Match: * "
                       "(AWS S3, MinIO, Azure)")


class FilesDestination(Destination):
    type_name = "files"
    guarantee = "exactly-once"
    capabilities = DestinationCapabilities(
        sync_modes=(DestinationSyncMode.OVERWRITE.value, DestinationSyncMode.APPEND.value),
        task_written_files=True,
        stages_overwrites=True,
        clusters_tables=False,
        partitions_tables=False,
        keeps_table_properties=False,
        commit_id="manifest",
    )

    @classmethod
    def spec(cls) -> dict[str, Any]:
        return _config.spec()

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        self.settings = _config.FilesSettings.of(self.config)
        self._lock = threading.RLock()
        #: The connection's ``spark.conf`` (:meth:`use_spark_conf`), for a check.
        self._spark_conf: dict[str, str] = {}
        #: The folder holding the streams' folders, once reached.
        self._root: TableFolder | None = None
        self._logs: dict[str, _manifests.Log] = {}
        #: Each stream's rows as the tasks write them (the metadata columns, then the data).
        self._schemas: dict[str, pa.Schema] = {}

    # ------------------------------------------------------------------ where

    def table_location(self, stream: str) -> str:
        return f"{self.settings.path}/{stream}"

    def dataset_namespace(self) -> str:
        return without_credentials(self.settings.path)

    def use_spark_conf(self, conf: Mapping[str, str]) -> None:
        self._spark_conf = dict(conf)

    def root(self, spark: SparkSession | None = None) -> TableFolder:
        """The folder of the streams' folders: local, or on S3 or Azure reached with the
        session's ``fs.s3a.*``/``fs.azure.*`` settings (else the connection's, for a check)."""
        with self._lock:
            if self._root is None:
                self._root = self._reach(spark)
            return self._root

    def _reach(self, spark: SparkSession | None) -> TableFolder:
        path = self.settings.path
        local = local_folder(path)
        if local is not None:
            return TableFolder(os.path.abspath(local))
        get = _hadoop_setting(spark) or (lambda key: self._spark_conf.get(f"spark.hadoop.{key}"))
        refusal = store_refusal(path, get)
        if refusal:
            raise ConfigError(f"{refusal}: the files destination's tasks reach {path} with "
                              "keys in the connection's spark.conf or the default credential "
                              "chain", field="destination.config.path")
        folder = store_folder(path, get)
        if folder is None:
            raise ConfigError(f"the files destination writes local folders, s3:// and "
                              f"abfss:// (or wasbs://) locations, not {path}",
                              field="destination.config.path")
        if folder.store is not None:
            register_secrets(folder.store.secrets)
        return folder

    def folder(self, stream: str, spark: SparkSession | None = None) -> TableFolder:
        """The stream's folder."""
        return self.root(spark).child(stream)

    def log(self, stream: str, spark: SparkSession | None = None) -> _manifests.Log:
        """The stream's log of manifests (one per destination and stream: it caches them)."""
        with self._lock:
            found = self._logs.get(stream)
            if found is None:
                folder = self.folder(stream, spark)

                def names() -> list[str]:
                    return [name for name, _, _ in folder.list_files(_manifests.MANIFESTS)]

                def create(relative: str, text: str) -> bool:
                    return create_text(folder, relative, text)

                found = self._logs[stream] = _manifests.Log(names, folder.read_text, create)
            return found

    def read_table(self, spark: SparkSession, stream: str,
                   columns: Sequence[str] | None = None) -> DataFrame:
        """The stream's table as a reader following the manifests sees it now, the files
        read by Spark's tasks (``_frame.py``)."""
        from headwater.destinations.files._frame import read_frame

        return read_frame(spark, self.root(spark), stream, columns)

    # ------------------------------------------------------------------ check

    def check(self) -> None:
        """The folder is reachable and writable: a scratch file is created there (with the
        create a commit uses, which must refuse a second create of the same name) and
        removed.  On S3 and Azure the shared probes do the same (``_s3_check``)."""
        folder = self.root()
        if folder.store is None:
            _check_local(folder.uri)
            return
        from headwater.destinations._table_files._azure import AzureAccess
        from headwater.destinations._table_files._azure_check import check_azure
        from headwater.destinations._table_files._s3_check import check_s3

        if isinstance(folder.store, AzureAccess):
            check_azure(self.settings.path, folder.store)
        else:
            check_s3(self.settings.path, folder.store, conditional_writes=True,
                     advice=_CONDITIONAL_ADVICE)

    # ------------------------------------------------------------------ preparing

    def prepare(self, spark: SparkSession, plan: StreamPlan, data_schema: pa.Schema) -> pa.Schema:
        _refuse_unsupported(spark, plan)
        folder = self.folder(plan.stream.name, spark)
        if folder.is_local:
            os.makedirs(folder.local_path(), exist_ok=True)
        self._schemas[plan.stream.name] = pa.schema(META_FIELDS + list(data_schema))
        return data_schema

    def table_columns(self, stream: str, spark: SparkSession | None = None) -> pa.Schema | None:
        """The columns of the stream's latest manifest (every file it lists has them);
        None before the first commit."""
        journal = self.log(stream, spark)
        taken = journal.sequences()
        return journal.get(taken[-1]).schema if taken else None

    def _schema(self, plan: StreamPlan) -> pa.Schema:
        """The rows' schema (from ``prepare``, else as the engine would hand it over)."""
        found = self._schemas.get(plan.stream.name)
        if found is None:
            found = pa.schema(META_FIELDS + list(arrow_schema_for(
                plan.json_schema, plan.stream.json_columns)))
        return found

    def file_writer(self, spark: SparkSession, plan: StreamPlan, *,
                    run_id: str = "") -> FileWriter:
        folder = self.folder(plan.stream.name, spark)
        tag = run_file_tag(run_id) if run_id else ""
        if self.settings.format == "parquet":
            return ParquetFiles(folder.uri, stats_columns=(), store=folder.store,
                                compression=self.settings.compression, name_tag=tag)
        return _text.TextFiles(folder.uri, self.settings.format, self.settings.compression,
                               self.settings.extension, name_tag=tag, store=folder.store)

    # ------------------------------------------------------------------ commits

    def find_commit(self, spark: SparkSession, plan: StreamPlan,
                    marker: CommitMarker) -> CommitResult | None:
        found = self.log(plan.stream.name, spark).find(marker.app_id, marker.version)
        if found is None:
            return None
        _refuse_other_run(found, marker, self.table_location(plan.stream.name))
        return _result(found, already=True)

    def commit(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
               rows: DataFrame, marker: CommitMarker) -> CommitResult:
        raise DestinationError("the files destination commits only files its tasks wrote "
                               "(file_writer); rows handed to the driver are not taken",
                               stream=marker.stream)

    def commit_files(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
                     files: DataFrame, marker: CommitMarker) -> CommitResult:
        """Run the tasks (they write the files), then list the files in one manifest."""
        stream = plan.stream.name
        written = _written(files, self.table_location(stream), marker)
        manifest = self._manifest(plan, written, _checkpoint_marker(marker),
                                  marker.tag_with_counts(*_figures(written)),
                                  replace=plan.stream.destination_sync_mode
                                  is DestinationSyncMode.OVERWRITE)
        what = f"commit of checkpoint {marker.checkpoint_index} to {self.table_location(stream)}"
        logged, created = self._append(spark, stream, manifest, marker, what,
                                       landed=commit_landed)
        if not created:  # an earlier attempt's commit: these files stay out of the table
            _refuse_other_run(logged, marker, self.table_location(stream))
            self._remove(spark, stream, _unlisted(written, logged))
            return _result(logged, already=True)
        return _result(logged, already=False)

    def _append(self, spark: SparkSession, stream: str, manifest: _manifests.Manifest,
                marker: CommitMarker | PublishMarker, what: str, *,
                landed: Callable[[], None] | None = None) -> tuple[_manifests.Manifest, bool]:
        """Log ``manifest``, then call ``landed`` (what follows a new manifest).

        Anything raised on the way (the put, its answer lost after it landed, the
        work after it) is looked up in the log by the marker, as the Delta
        destination looks up its history: found, the commit counts as made; not
        found, it failed; a lookup that raises too leaves the outcome unknown, and
        the run stays resumable.  Calling it failed while its manifest is in the log
        would have the next run write the checkpoint again (every row twice)."""
        checkpoint = marker.checkpoint_index if isinstance(marker, CommitMarker) else None
        journal = self.log(stream, spark)
        try:
            logged, created = journal.append(manifest)
            if created and landed is not None:
                landed()
            return logged, created
        except Exception as exc:
            try:
                found = journal.find(marker.app_id, marker.version)
            except Exception as lookup:
                raise CommitOutcomeUnknownError(what, error=error_line(exc),
                                                lookup=error_line(lookup), stream=stream,
                                                checkpoint=checkpoint) from exc
            if found is None:
                raise DestinationError(f"{what} failed: {error_line(exc)}", stream=stream) from exc
            log.warning("%s raised after its manifest %s landed, so it counts as committed: %s",
                        what, found.sequence, error_line(exc))
            return found, True

    def _manifest(self, plan: StreamPlan, written: list[WrittenFile], marker: Mapping[str, Any],
                  tag: str, *, replace: bool) -> _manifests.Manifest:
        return _manifests.Manifest(
            files=tuple(_manifests.ListedFile(f.path, f.rows, f.size) for f in written),
            marker=marker, tag=tag, format=self.settings.format,
            compression=self.settings.compression, schema=self._schema(plan), replace=replace,
            rejected=sum(f.rejected for f in written))

    # ------------------------------------------- overwrites: staged, then published

    def stage_files(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
                    files: DataFrame, marker: CommitMarker) -> CommitResult:
        """Run the tasks, then keep the checkpoint's manifest in the run's staging folder."""
        stream = plan.stream.name
        written = _written(files, self.table_location(stream), marker)
        manifest = self._manifest(plan, written, _checkpoint_marker(marker),
                                  marker.tag_with_counts(*_figures(written)), replace=False)
        name = _manifests.staged_name(marker.run_id, marker.checkpoint_index)
        if create_text(self.folder(stream, spark), name, manifest.to_json()):
            return replace(_result(manifest, already=False), version=None)
        earlier = self._staged(spark, stream, marker.run_id, marker.checkpoint_index)
        if earlier is None:
            raise DestinationError(f"the staging of checkpoint {marker.checkpoint_index} at "
                                   f"{name} was taken, then vanished", stream=stream)
        # Staged by an earlier attempt: these files stay out.
        self._remove(spark, stream, _unlisted(written, earlier))
        return replace(_result(earlier, already=True), version=None)

    def find_staged(self, spark: SparkSession, plan: StreamPlan,
                    marker: CommitMarker) -> CommitResult | None:
        staged = self._staged(spark, plan.stream.name, marker.run_id, marker.checkpoint_index)
        return None if staged is None else replace(_result(staged, already=True), version=None)

    def _staged(self, spark: SparkSession, stream: str, run_id: str,
                checkpoint: int) -> _manifests.Manifest | None:
        text = self.folder(stream, spark).read_text(_manifests.staged_name(run_id, checkpoint))
        return None if text is None else _manifests.Manifest.from_json(text)

    def publish(self, spark: SparkSession, plan: StreamPlan,
                marker: PublishMarker) -> CommitResult:
        """One manifest replacing the table with every staged checkpoint's files."""
        stream = plan.stream.name
        journal = self.log(stream, spark)
        found = journal.find(marker.app_id, marker.version)
        if found is None:
            staged = {index: self._staged(spark, stream, marker.run_id, index)
                      for index in marker.checkpoints}
            missing = [index for index, manifest in staged.items() if manifest is None]
            if missing:
                raise DestinationError(f"cannot publish the overwrite of run {marker.run_id}: "
                                       f"checkpoints {missing} are not staged", stream=stream)
            parts = [m for m in staged.values() if m is not None]
            files = [f for m in parts for f in m.files]
            rows, size = sum(f.rows for f in files), sum(f.bytes for f in files)
            rejected = sum(m.rejected for m in parts)
            manifest = _manifests.Manifest(
                files=tuple(files), marker=_publish_marker(marker),
                tag=marker.tag_with_counts(rows, rejected, size), format=self.settings.format,
                compression=self.settings.compression, schema=self._schema(plan),
                replace=True, rejected=rejected)
            found, created = self._append(
                spark, stream, manifest, marker,
                f"publish of the overwrite of run {marker.run_id} to "
                f"{self.table_location(stream)}")
            result = _result(found, already=not created)
        else:
            result = _result(found, already=True)
        with contextlib.suppress(OSError):  # listed now: the staging is done with
            self.folder(stream, spark).delete_folder(f"{_manifests.STAGING}/{marker.run_id}")
        return result

    def clear_staging(self, spark: SparkSession, plan: StreamPlan, *, keep_run_id: str) -> None:
        """Remove other runs' staging and the files it named that no manifest of the log
        names (a run whose publish landed has left its staging's files in the table)."""
        stream = plan.stream.name
        folder = self.folder(stream, spark)
        runs = [run for run in _subfolders(folder, _manifests.STAGING) if run != keep_run_id]
        if not runs:
            return
        listed = _logged_files(self.log(stream, spark))
        for run in runs:
            for staged in _staged_manifests(folder, run):
                for listed_file in staged.files:
                    if listed_file.path not in listed:
                        with contextlib.suppress(OSError):
                            folder.delete_file(listed_file.path)
            folder.delete_folder(f"{_manifests.STAGING}/{run}")

    def abort(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
              marker: CommitMarker) -> None:
        """Remove the files of ``marker``'s run that no manifest names (logged or staged):
        a failed checkpoint's.  Only files whose names carry the run's tag, written since
        the run began: another writer's files are never touched."""
        stream = plan.stream.name
        folder = self.folder(stream, spark)
        named = _logged_files(self.log(stream, spark))
        for run in _subfolders(folder, _manifests.STAGING):
            named |= {f.path for staged in _staged_manifests(folder, run) for f in staged.files}
        mark = f".{run_file_tag(marker.run_id)}."
        since_ms = run_started(marker.run_id) * 1000
        removed = []
        for name, _, modified_ms in folder.list_files():
            if mark in name and name not in named and modified_ms >= since_ms:
                with contextlib.suppress(OSError):
                    folder.delete_file(name)
                    removed.append(name)
        if removed:
            log.info("removed %s file(s) a failed checkpoint of run %s wrote into %s",
                     len(removed), marker.run_id, folder.uri)

    def delete_checkpoints(self, spark: SparkSession, stream: str, run_id: str,
                           checkpoints: Sequence[int]) -> int:
        """One manifest that replaces the table with its files but those the commits of
        ``run_id``'s ``checkpoints`` added (``_manifests.without_checkpoints``): the files
        are never rewritten, readers see the rows go at once, and the log keeps the
        manifests that listed them.  Created under the number after the log it was
        computed from, or computed again: a commit landing meanwhile is never dropped.
        The removed files stay on disk (the log's older manifests name them)."""
        deleted: list[int] = []

        def replacing(log: list[_manifests.Manifest]) -> _manifests.Manifest | None:
            found = _manifests.without_checkpoints(log, run_id, set(checkpoints))
            if found is None:
                return None
            deleted[:] = [found[1]]
            return found[0]

        try:
            logged = self.log(stream, spark).append_from(replacing)
        except RuntimeError as exc:
            raise DestinationError(f"no free manifest number to remove checkpoints of run "
                                   f"{run_id} from {self.table_location(stream)}",
                                   stream=stream) from exc
        if logged is None:
            return 0
        log.info("removed the rows of checkpoints %s of run %s from %s (manifest %s)",
                 sorted(checkpoints), run_id, self.table_location(stream), logged.sequence)
        return deleted[0]

    def lane_versions(self, spark: SparkSession, stream: str,
                      app_id_prefix: str) -> dict[str, int]:
        versions: dict[str, int] = {}
        for manifest in self.log(stream, spark).manifests():
            app_id, version = manifest.marker.get("app_id"), manifest.marker.get("version")
            if isinstance(app_id, str) and app_id.startswith(app_id_prefix) \
                    and isinstance(version, int):
                versions[app_id] = max(version, versions.get(app_id, version))
        return versions

    def _remove(self, spark: SparkSession, stream: str, written: list[WrittenFile]) -> None:
        """Delete files no manifest will name (their checkpoint landed earlier)."""
        folder = self.folder(stream, spark)
        for file in written:
            with contextlib.suppress(OSError):
                folder.delete_file(file.path)


def _refuse_unsupported(spark: SparkSession, plan: StreamPlan) -> None:
    """Refuse what plain files cannot do, before anything is written (a ConfigError)."""
    name = plan.stream.name
    mode = plan.stream.destination_sync_mode
    problem = None
    if mode is DestinationSyncMode.APPEND_DEDUP:
        problem = ("append_dedup needs one row per primary key, which plain files cannot keep "
                   "without rewriting the table; use append (and deduplicate when reading), or "
                   "the delta, iceberg or postgres destination")
    elif mode is DestinationSyncMode.HISTORY:
        problem = ("history closes a key's current version when the next one comes, which "
                   "means changing rows already written, and plain files are never rewritten; "
                   "use append (every version lands as a row; order them by the cursor when "
                   "reading), or the delta, iceberg or postgres destination")
    elif not plan.stream.table_layout.is_default:
        problem = ("partition_by, cluster_by and table_properties are not taken by the files "
                   "destination (one flat folder per stream); remove them from the stream")
    else:
        try:
            spark.sparkContext  # noqa: B018 - raises under Spark Connect
        except Exception:
            problem = ("the files destination needs classic Spark: its tasks write the files "
                       "and the driver lists them, which Spark Connect's driver cannot see")
    if problem is not None:
        raise ConfigError(f"stream {name!r} ({plan.stream.mode_label}): {problem}",
                          stream=name, field="destination.type")


def _hadoop_setting(spark: SparkSession | None) -> Callable[[str], str | None] | None:
    """The session's Hadoop settings (``get``), or None without a classic session."""
    if spark is None:
        return None
    try:
        get: Callable[[str], str | None] = spark.sparkContext._jsc.hadoopConfiguration().get
    except Exception:
        return None
    return get


def _check_local(path: str) -> None:
    """The folder (or, before the first sync creates it, its nearest existing parent)
    takes a scratch file created the way manifests are, and refuses a second create."""
    probe = path
    while not os.path.exists(probe) and os.path.dirname(probe) != probe:
        probe = os.path.dirname(probe)
    advice = ("give this user write access there, or set destination.config.path to a "
              "writable folder")
    if not os.path.isdir(probe):
        raise DestinationError(f"the files destination's path {path} is not a folder (a file "
                               f"is in the way at {probe}); move it, or set "
                               "destination.config.path to a folder")
    folder = TableFolder(probe)
    name = f".headwater-check-{uuid.uuid4().hex}"
    try:
        if not create_text(folder, name, "headwater check\n") or \
                create_text(folder, name, "again\n"):
            raise DestinationError(f"the files destination's folder {path} does not refuse a "
                                   "second create of one file name (hard links?), so a "
                                   f"manifest could be replaced; {advice}")
    except OSError as exc:
        raise DestinationError(f"the files destination's folder {path} is not writable "
                               f"(creating a scratch file in {probe} failed: {exc}); {advice}",
                               ) from exc
    finally:
        with contextlib.suppress(OSError):
            folder.delete_file(name)


def _written(files: DataFrame, location: str, marker: CommitMarker) -> list[WrittenFile]:
    """Run a checkpoint's tasks (they write its files); the files they describe."""
    try:
        return [WrittenFile(**row.asDict()) for row in files.collect()]
    except Exception as exc:
        raise DestinationError(f"writing the files of checkpoint {marker.checkpoint_index} of "
                               f"{location} failed: {error_line(exc)}",
                               stream=marker.stream) from exc


def _unlisted(written: list[WrittenFile], manifest: _manifests.Manifest) -> list[WrittenFile]:
    """The files of ``written`` that ``manifest`` does not name.  All of them, when it is an
    earlier attempt's; none, when it is this commit's own whose answer the store lost (the
    put landed, its retry was refused): those files are the table's now."""
    named = {f.path for f in manifest.files}
    return [f for f in written if f.path not in named]


def _figures(written: list[WrittenFile]) -> tuple[int, int, int]:
    return (sum(f.rows for f in written), sum(f.rejected for f in written),
            sum(f.size for f in written))


def _checkpoint_marker(marker: CommitMarker) -> dict[str, Any]:
    document: dict[str, Any] = {"app_id": marker.app_id, "version": marker.version,
                                "run_id": marker.run_id, "stream": marker.stream,
                                "checkpoint": marker.checkpoint_index}
    if marker.partition_states is not None:
        document["partition_states"] = dict(marker.partition_states)
    return document


def _publish_marker(marker: PublishMarker) -> dict[str, Any]:
    return {"app_id": marker.app_id, "version": marker.version, "run_id": marker.run_id,
            "stream": marker.stream, "published": list(marker.checkpoints)}


def _result(manifest: _manifests.Manifest, *, already: bool) -> CommitResult:
    states = manifest.marker.get("partition_states")
    return CommitResult(rows=manifest.rows, rejected=manifest.rejected, bytes=manifest.bytes,
                        version=manifest.sequence, already_committed=already,
                        partition_states=dict(states) if isinstance(states, dict) else {},
                        writer=WRITER, writer_reason=_EARLIER if already else _WRITER_REASON)


def _refuse_other_run(found: _manifests.Manifest, marker: CommitMarker, location: str) -> None:
    """A marker's version logged by another run: the metadata store went back in time
    (restored from an older copy), and skipping the commit would lose its rows."""
    owner = found.marker.get("run_id")
    if owner != marker.run_id:
        raise StoreBehindTableError(
            f"the metadata store is behind the table: checkpoint {marker.checkpoint_index} of "
            f"run {marker.run_id} got version {marker.version} of {marker.app_id}, which "
            f"manifest {found.sequence} of {location} holds for run {owner}; nothing was "
            "committed. The store was restored from an older copy (or lost writes)",
            stream=marker.stream)


def _logged_files(journal: _manifests.Log) -> set[str]:
    """Every file any manifest of the log names (current or replaced)."""
    return {f.path for manifest in journal.manifests() for f in manifest.files}


def _staged_manifests(folder: TableFolder, run_id: str) -> list[_manifests.Manifest]:
    """The checkpoints run ``run_id`` staged (what is no manifest, a temporary file, is
    left out)."""
    found = []
    for name, _, _ in folder.list_files(f"{_manifests.STAGING}/{run_id}"):
        text = folder.read_text(f"{_manifests.STAGING}/{run_id}/{name}")
        with contextlib.suppress(ValueError, KeyError, TypeError):
            found.append(_manifests.Manifest.from_json(text or ""))
    return found


def _subfolders(folder: TableFolder, relative: str) -> list[str]:
    """The names of the folders directly below ``relative``."""
    from pyarrow import fs as pafs

    fs, base = folder.filesystem()
    try:
        found = fs.get_file_info(pafs.FileSelector(f"{base}/{relative}", allow_not_found=True))
    except FileNotFoundError:
        return []
    return [info.base_name for info in found if info.type == pafs.FileType.Directory]


__all__ = ["WRITER", "FilesDestination"]
