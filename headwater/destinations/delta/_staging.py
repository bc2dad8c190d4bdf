"""Where an overwrite's checkpoints wait, durable but unseen, until the run publishes them.

An ``overwrite`` run of several checkpoints must not show readers a table with
part of the new rows and none of the old (a run that fails half-way would leave
it so).  Each checkpoint is staged under the table's folder, in
``_headwater_staging/<run id>``, and one commit publishes them all:

* files the tasks wrote (``_table_files/_parquet.py``) are already in the table's folder, where
  readers do not see them until a commit adds them; staging one checkpoint is
  writing the list of its files, a *manifest* ``<checkpoint index>.json``, durably
  (in a local folder: a temporary file, fsync, rename; on S3: one put, which is
  whole or absent), and the publish adds every manifest's files in one delta-rs
  commit that removes the table's current files;
* Spark's writer cannot leave files out of a commit, so it appends each
  checkpoint, with its usual ``txn`` pair and tag, to a *staging Delta table* at
  that place, and the publish writes that table over the target.

Delta readers, ``VACUUM`` (Spark's and delta-rs's) and Spark's file listing skip
names that start with ``_``, so the staging is invisible to the table's readers
and safe from its maintenance.  The data files a manifest lists sit in the
table's folder though, unreferenced until the publish: a ``VACUUM`` with a
retention shorter than a stopped run's pause removes them, which the publish
checks (it refuses, the old table stays).

Once published, the run's staging is removed: from the driver's filesystem, or
through Hadoop's ``FileSystem`` in Spark's JVM on classic Spark; under Spark
Connect the client reaches no filesystem, so it stays and is logged.  A run that
failed (it is never resumed) leaves its staging behind; the next overwrite of
the stream removes it as it starts (:func:`remove`).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from headwater.destinations._table_files._parquet import WrittenFile
from headwater.destinations._table_files._store import TableFolder, local_folder

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

#: The folder, inside a table's, that holds every run's staging of that table.
STAGING_FOLDER = "_headwater_staging"


def staging_location(location: str, run_id: str) -> str:
    """Where run ``run_id`` stages the table at ``location`` (a folder of manifests or a table)."""
    return f"{location.rstrip('/')}/{STAGING_FOLDER}/{run_id}"


@dataclass(frozen=True)
class Manifest:
    """One staged checkpoint of task-written files."""

    run_id: str
    stream: str
    checkpoint: int
    files: tuple[WrittenFile, ...]

    @property
    def rows(self) -> int:
        return sum(f.rows for f in self.files)

    @property
    def rejected(self) -> int:
        return sum(f.rejected for f in self.files)

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)


def _manifest_path(run_id: str, checkpoint: int) -> str:
    """The manifest's path relative to the table's folder."""
    return f"{STAGING_FOLDER}/{run_id}/{checkpoint}.json"


def write_manifest(folder: str | TableFolder, manifest: Manifest) -> None:
    """Stage ``manifest`` in the table at ``folder``: once this returns, it survives a crash.

    In a local folder: written to a temporary name, synced, then renamed, so a
    reader finds the whole manifest or none; the folder is synced too, so the
    name is durable.  On S3 one put is all or nothing, and durable once answered.
    """
    place = TableFolder.of(folder)
    document = {"run_id": manifest.run_id, "stream": manifest.stream,
                "checkpoint": manifest.checkpoint, "files": [asdict(f) for f in manifest.files]}
    relative = _manifest_path(manifest.run_id, manifest.checkpoint)
    if not place.is_local:
        place.put_text(relative, json.dumps(document, separators=(",", ":")))
        return
    run_folder = place.local_path(f"{STAGING_FOLDER}/{manifest.run_id}")
    os.makedirs(run_folder, exist_ok=True)
    target = place.local_path(relative)
    temporary = f"{target}.{uuid.uuid4().hex}.tmp"
    with open(temporary, "w", encoding="utf-8") as out:
        json.dump(document, out, separators=(",", ":"))
        out.flush()
        os.fsync(out.fileno())
    os.replace(temporary, target)
    for synced in (run_folder, os.path.dirname(run_folder)):
        _fsync_folder(synced)


def read_manifest(folder: str | TableFolder, run_id: str, checkpoint: int) -> Manifest | None:
    """The staged checkpoint ``checkpoint`` of run ``run_id``, or None when it is not staged."""
    text = TableFolder.of(folder).read_text(_manifest_path(run_id, checkpoint))
    if text is None:
        return None
    document = json.loads(text)
    return Manifest(run_id=document["run_id"], stream=document["stream"],
                    checkpoint=int(document["checkpoint"]),
                    files=tuple(WrittenFile(**f) for f in document["files"]))


def missing_files(folder: str | TableFolder, manifests: Sequence[Manifest]) -> list[str]:
    """Files the manifests list that are no longer in the table's folder (a ``VACUUM``)."""
    place = TableFolder.of(folder)
    return [f.path for m in manifests for f in m.files if not place.exists(f.path)]


def remove(spark: SparkSession, location: str, *, run_id: str | None = None,
           keep_run_id: str | None = None, table: TableFolder | None = None) -> None:
    """Remove run ``run_id``'s staging, or every run's but ``keep_run_id``'s.

    ``table``: the table's folder on an object store the driver reaches itself
    (the task path's S3 tables): removed through pyarrow, not Spark's JVM.
    Best effort: staging left behind costs space, never correctness (the next
    overwrite of the stream removes it), so a failure is logged, not raised.
    """
    root = f"{location.rstrip('/')}/{STAGING_FOLDER}"
    try:
        if table is not None and not table.is_local:
            _remove_in(table.child(STAGING_FOLDER), run_id=run_id, keep_run_id=keep_run_id)
            return
        folder = local_folder(root) if _classic(spark) else None
        if folder is not None:
            names = [run_id] if run_id is not None else (
                os.listdir(folder) if os.path.isdir(folder) else [])
            for name in names:
                if name != keep_run_id:
                    shutil.rmtree(os.path.join(folder, name), ignore_errors=True)
            return
        if not _classic(spark):
            if run_id is not None:
                log.info("the staging of run %s at %s stays: a Spark Connect client cannot "
                         "delete files (remove it by hand)", run_id, root)
            return
        _remove_through_hadoop(spark, root, run_id=run_id, keep_run_id=keep_run_id)
    except Exception as exc:  # see the docstring: never raised
        log.warning("could not remove the staging at %s: %s: %s", root, type(exc).__name__, exc)


def _remove_in(staging: TableFolder, *, run_id: str | None, keep_run_id: str | None) -> None:
    """:func:`remove` through pyarrow's filesystem of ``staging`` (the staging root)."""
    from pyarrow import fs as pafs

    if run_id is not None:
        staging.delete_folder(run_id)
        return
    filesystem, base = staging.filesystem()
    try:
        found = filesystem.get_file_info(pafs.FileSelector(base, allow_not_found=True))
    except FileNotFoundError:
        return
    for info in found:
        if info.type == pafs.FileType.Directory and info.base_name != keep_run_id:
            staging.delete_folder(info.base_name)


def _remove_through_hadoop(spark: SparkSession, root: str, *, run_id: str | None,
                           keep_run_id: str | None) -> None:
    """:func:`remove` for any filesystem Spark's JVM reaches (object stores included)."""
    context = spark.sparkContext
    jvm: Any = context._jvm
    path = jvm.org.apache.hadoop.fs.Path(root)
    fs = path.getFileSystem(context._jsc.hadoopConfiguration())
    if run_id is not None:
        fs.delete(jvm.org.apache.hadoop.fs.Path(f"{root}/{run_id}"), True)
        return
    if not fs.exists(path):
        return
    for status in fs.listStatus(path):
        if status.getPath().getName() != keep_run_id:
            fs.delete(status.getPath(), True)


def _classic(spark: SparkSession) -> bool:
    """Whether ``spark`` is a classic session (its driver shares this process's JVM gateway)."""
    try:
        spark.sparkContext  # noqa: B018 - raises under Spark Connect
    except Exception:
        return False
    return True


def _fsync_folder(folder: str) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


__all__ = ["STAGING_FOLDER", "Manifest", "missing_files", "read_manifest", "remove",
           "staging_location", "write_manifest"]
