"""What an Iceberg checkpoint that failed before its commit leaves behind, and its removal.

The tasks write a checkpoint's data files into the table's data folder before
the commit adds them in a snapshot: a Spark job that failed half way, or a
commit that did not land, leaves files no snapshot references.  Readers never
see them (Iceberg reads manifests, not folders); they take space until an
orphan-file removal.  :func:`drop_unreferenced_files` removes the run's ones.

Never committed data: every snapshot the table's metadata holds counts, on
every branch (a staged overwrite's checkpoints are snapshots of its staging
branch until the publish), so a file any of them references stays, and so
does one older than the run or without the run's tag in its name (another
writer's, ``_uncommitted.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from headwater.destinations._uncommitted import drop_unnamed_files

if TYPE_CHECKING:
    from pyiceberg.table import Table


def drop_unreferenced_files(table: Table, data_folder: Path, run_id: str) -> list[str]:
    """Remove the data files of run ``run_id`` under ``data_folder`` that no snapshot of
    ``table`` references; the names removed."""
    return drop_unnamed_files(data_folder, run_id, referenced_names(table))


def referenced_names(table: Table) -> set[str]:
    """The names of the data files every snapshot of ``table`` references."""
    names: set[str] = set()
    manifests_seen: set[str] = set()
    for snapshot in table.snapshots():
        for manifest in snapshot.manifests(table.io):
            if manifest.manifest_path in manifests_seen:
                continue
            manifests_seen.add(manifest.manifest_path)
            for entry in manifest.fetch_manifest_entry(table.io, discard_deleted=False):
                names.add(Path(entry.data_file.file_path).name)
    return names
