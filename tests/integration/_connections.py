"""Write a connection file for a test (each test states only what differs from the defaults),
and run a sync of it in process.

The defaults are the ones an in-process integration test wants: the Delta
tables in ``folder/lake`` and an embedded SQLite metadata store in
``folder/meta.db``, both written as absolute paths so that the file works from
any working directory.  A CLI test that relies on ``HEADWATER_HOME`` passes
``store_file=None`` (no ``metadata_store`` key) and a relative ``lake``, which
the CLI resolves against its working directory, as a user's project would.

Example::

    path = connection_file(tmp_path, name="it", source={"users": 300},
                           streams=[{"name": "users", "sync_mode": "incremental"}],
                           checkpoint={"partitions_per_checkpoint": 2})
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from headwater.config import load_connection
from headwater.destinations import Destination
from headwater.engine import SyncEngine, SyncResult
from headwater.metadata_store import MetadataStore


def connection_file(
    folder: Path,
    *,
    name: str,
    source: Mapping[str, Any],
    streams: Sequence[Mapping[str, Any]],
    source_type: str = "sample",
    lake: str | None = None,
    store_file: str | None = "meta.db",
    checkpoint: Mapping[str, Any] | None = None,
    writer: str | None = None,
    delta_config: Mapping[str, Any] | None = None,
    **extra: Any,
) -> Path:
    """Write ``folder/<name>.yaml`` and return its path.

    ``source`` is the source's ``config`` (its ``type`` is ``source_type``).
    ``lake`` is the Delta destination's path, written as given; ``None`` means
    ``folder/lake``.  ``store_file`` is the SQLite store's file relative to
    ``folder`` (its parent folder is created); ``None`` leaves ``metadata_store``
    out.  ``writer`` is the Delta destination's ``writer`` (its default when ``None``);
    ``delta_config`` holds more of its config (``database``, ``table_prefix``...).
    ``checkpoint`` and any ``extra`` top-level keys (``after_sync``, a whole
    ``destination`` section in place of the Delta one, ...)
    are written only when not ``None``.  Writing again with the same ``name`` replaces
    the file and keeps the state and tables, as a user editing it would.
    """
    document: dict[str, Any] = {
        "name": name,
        "source": {"type": source_type, "config": dict(source)},
        "destination": {"type": "delta",
                        "config": {"path": str(folder / "lake") if lake is None else lake}},
        "streams": [dict(stream) for stream in streams],
    }
    if writer is not None:
        document["destination"]["config"]["writer"] = writer
    document["destination"]["config"].update(delta_config or {})
    if store_file is not None:
        (folder / store_file).parent.mkdir(parents=True, exist_ok=True)
        document["metadata_store"] = f"sqlite:///{folder / store_file}"
    if checkpoint is not None:
        document["checkpoint"] = dict(checkpoint)
    document.update({key: value for key, value in extra.items() if value is not None})
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def engine(path: Path, destination: Destination | None = None) -> SyncEngine:
    """An engine for the connection file at ``path``, on the metadata store it names.

    ``destination``: one built by the test (one that "dies" at a chosen point, say)
    in place of the one the file describes.
    """
    connection = load_connection(path)
    return SyncEngine(connection, MetadataStore(connection.metadata_store or ""),
                      destination=destination)


def sync(path: Path, destination: Destination | None = None, *,
         expect: str | None = "succeeded") -> SyncResult:
    """Run one sync of ``path`` and return its result, checked to end as ``expect``.

    ``expect=None`` checks nothing (the test looks at the result itself).
    """
    result = engine(path, destination).run()
    if expect is not None:
        assert result.status == expect, result.to_dict()
    return result
