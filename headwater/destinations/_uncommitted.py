"""Removing the files a failed checkpoint's tasks wrote into a local table's folder.

Shared by the destinations whose tasks write a table's files before the commit
names them (Delta, Iceberg): each says which file names its table (its log,
its snapshots, its staged manifests) still names, and this removes the rest of
what the run wrote.  Only what the run wrote: the tasks put the run's tag in each
file's name (:func:`run_file_tag`, ``ParquetFiles.name_tag``), and a file
without it is never touched.  Why: another writer of the same table (a user's
``OPTIMIZE``, a Spark job, another tool) writes its files before its own commit
names them too; removing one of those in flight would make that commit name a
missing file.  The run's start bounds it as well: a file older than the run is
not the run's.  Why local folders only: listing an object store's prefix per
failed checkpoint costs more than the space the files take until the table's
own maintenance (``VACUUM``, orphan-file removal) removes them.
"""

from __future__ import annotations

import logging
from collections.abc import Set
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import unquote

log = logging.getLogger(__name__)


def local_folder_of(location: str) -> Path | None:
    """``location`` as a local folder, or None when it is not on this machine's filesystem."""
    if location.startswith("file://"):
        return Path(unquote(location.removeprefix("file://")))
    return None if "://" in location else Path(location)


def run_started(run_id: str) -> float:
    """The epoch seconds a run id (``20261122T041500Z-1a2b3c``) says its run began."""
    stamp = run_id.split("-", 1)[0]
    return datetime.strptime(stamp, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC).timestamp()


def run_file_tag(run_id: str) -> str:
    """What the files run ``run_id``'s tasks write carry in their names."""
    return f"hw-{run_id}"


def drop_unnamed_files(folder: Path, run_id: str, named: Set[str]) -> list[str]:
    """Remove the Parquet files under ``folder`` that run ``run_id``'s tasks wrote (their
    names carry its tag) and ``named`` lacks (paths with a part starting ``_`` or ``.`` are
    never looked at: logs, staging, metadata); the names removed."""
    since = run_started(run_id)
    mark = f".{run_file_tag(run_id)}."
    removed = []
    for path in folder.rglob(f"*{mark}*parquet"):
        parts = path.relative_to(folder).parts
        if any(part.startswith(("_", ".")) for part in parts) or path.name in named:
            continue
        if path.stat().st_mtime < since:
            continue
        path.unlink(missing_ok=True)
        removed.append(path.name)
    if removed:
        log.info("removed %s file(s) a failed checkpoint of run %s wrote into %s",
                 len(removed), run_id, folder)
    return removed


__all__ = ["drop_unnamed_files", "local_folder_of", "run_file_tag", "run_started"]
