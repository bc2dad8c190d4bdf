"""What a Delta checkpoint that failed before its commit leaves behind, and its removal.

Files the tasks wrote (``file_writer``) land in the table's folder before the
commit names them: a checkpoint whose Spark job failed half way (the tasks that
finished keep their files), or whose delta-rs commit did not land, leaves data
files no commit adds.  Readers never see them (Delta reads the log, not the
folder) but they take space until a ``VACUUM``, and a retried or resumed
checkpoint writes new ones.  :func:`drop_uncommitted_files` removes them.

Never committed data, never another writer's: a file is removed only when (1) the
run's tasks wrote it (its name carries the run's tag) since the run began, (2) no
``add`` or ``remove`` of the table's log names it, and (3) no manifest of the run's
staged overwrite lists it (staged checkpoints keep their files in the table's folder
until the publish).  The engine calls ``abort`` once every commit lane of the stream
has ended, so no file of the run's own commits in flight can be mistaken for debris.  Local
tables only: on an object store the files stay for ``VACUUM`` (listing a
bucket's prefix per failed checkpoint costs more than the space;
``_uncommitted.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote

from headwater.destinations._uncommitted import drop_unnamed_files

#: Where Delta keeps the table's log, and where Headwater stages overwrites.
_LOG, _STAGING = "_delta_log", "_headwater_staging"


def drop_uncommitted_files(table: Path, run_id: str) -> list[str]:
    """Remove the table's data files of run ``run_id`` that no commit and no staged
    manifest names (see the module docstring); the names removed."""
    if not (table / _LOG).is_dir():
        return []
    named = _logged_names(table / _LOG) | _manifested_names(table / _STAGING / run_id)
    return drop_unnamed_files(table, run_id, named)


def _logged_names(log_folder: Path) -> set[str]:
    """File names every commit file and every checkpoint of the log adds or removes.

    The checkpoints count too: a table with a short ``delta.logRetentionDuration``
    may have dropped the commit files of this very run once a checkpoint holds them.
    """
    names: set[str] = set()
    for commit in log_folder.glob("*.json"):
        for line in commit.read_text(encoding="utf-8").splitlines():
            action = json.loads(line) if line.strip() else {}
            for kind in ("add", "remove"):
                if kind in action:
                    names.add(Path(unquote(action[kind]["path"])).name)
    for checkpoint in log_folder.glob("*.checkpoint*.parquet"):
        names |= _checkpoint_names(checkpoint)
    return names


def _checkpoint_names(checkpoint: Path) -> set[str]:
    """File names a checkpoint (classic or a V2 sidecar) adds or removes."""
    import pyarrow.parquet as pq

    schema = pq.read_schema(checkpoint)
    kinds = [kind for kind in ("add", "remove") if kind in schema.names]
    table = pq.read_table(checkpoint, columns=kinds)
    names: set[str] = set()
    for kind in kinds:
        for action in table.column(kind).to_pylist():
            if action and action.get("path"):
                names.add(Path(unquote(action["path"])).name)
    return names


def _manifested_names(run_staging: Path) -> set[str]:
    """File names the run's staged checkpoints (their manifests) list."""
    names: set[str] = set()
    for manifest in run_staging.glob("*.json"):
        document = json.loads(manifest.read_text(encoding="utf-8"))
        names.update(Path(f["path"]).name for f in document.get("files", ()))
    return names
