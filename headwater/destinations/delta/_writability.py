"""Before a Delta table is written: can it be, and who writes it.

``headwater check`` proves the tables' folder writable (a local folder here; S3 and
Azure in ``_table_files``), and a sync chooses per stream between the task path
(pyarrow files committed through delta-rs) and Spark's Delta writer, refusing the
task path with a reason a person reads in the run's summary (``writer_reason``).
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from headwater.config import register_secrets
from headwater.destinations._table_files._azure_check import check_azure
from headwater.destinations._table_files._s3_check import check_s3
from headwater.destinations._table_files._store import (
    S3Access,
    TableFolder,
    local_folder,
    on_object_store,
    s3_bucket_and_key,
    store_folder,
    store_refusal,
)
from headwater.destinations.delta import _delta_rs
from headwater.destinations.delta._reach import _driver_folder, _store_refusal
from headwater.destinations.delta._table_fit import refuse_misfits
from headwater.errors import DestinationError
from headwater.sync_modes import DestinationSyncMode

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from headwater.plan import StreamPlan

log = logging.getLogger(__name__)

#: How :meth:`DeltaDestination._choose` names each store in ``writer_reason``.
STORE_NAMES = {"s3": "S3 with conditional writes", "az": "Azure with conditional writes"}


#: Why ``gs://`` tables stay on Spark's writer (``docs/destinations/delta.md``).
_GCS_REASON = ("; on GCS, delta-rs commits through object_store's XML API "
               "(x-goog-if-generation-match: 0), which no GCS emulator the tests run speaks, "
               "so no test proves those commits safe yet")


@dataclass(frozen=True)
class _Choice:
    """Who writes a stream's table: the tasks (into ``folder``) or, when None, Spark; and why."""

    folder: TableFolder | None
    reason: str


def _unreadable(exc: BaseException) -> _Choice:
    """Spark writes a table whose log delta-rs cannot load (its error, first line)."""
    first_line = (str(exc).strip().splitlines() or [""])[0]
    return _Choice(None, f"delta-rs cannot read the table's log ({type(exc).__name__}: "
                         f"{first_line})")


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


def check_root(root: str, get: Callable[[str], str | None], *, conditional_writes: bool) -> None:
    """``headwater check`` of the tables' folder ``root``, reached with the Hadoop
    settings ``get`` reads (``DeltaDestination.check`` says what is checked where)."""
    folder = local_folder(root)
    if folder is not None:
        _check_writable(folder)
        return
    skipped = check_skipped(root, get)
    if skipped:
        log.info("%s", skipped)
        return
    reached = store_folder(root, get)
    if reached is None or reached.store is None:
        return
    register_secrets(reached.store.secrets)
    if isinstance(reached.store, S3Access):
        check_s3(root, reached.store, conditional_writes=conditional_writes)
    else:
        check_azure(root, reached.store)


def check_skipped(root: str, get: Callable[[str], str | None]) -> str | None:
    """Why ``headwater check`` cannot reach ``root`` without Spark (None: it can)."""
    if local_folder(root) is not None:
        return None
    if not on_object_store(root):
        return (f"{root} is not a local folder nor on S3 or Azure: it is "
                "reachable only through Spark, which a check does not start, so nothing "
                "was checked")
    refusal = store_refusal(root, get)
    if refusal:
        return f"{refusal}: {root} was not checked (a check starts no Spark)"
    return None


def readable_folder(location: str, get: Callable[[str], str | None]) -> TableFolder | None:
    """The folder delta-rs reads the table at ``location`` from without Spark (a local
    folder, S3, Azure), or None where only Spark reaches it."""
    local = local_folder(location)
    if local is not None:
        return TableFolder(local)
    if on_object_store(location) and not store_refusal(location, get):
        return store_folder(location, get)
    return None


def check_tables(streams: Mapping[str, pa.Schema], location_of: Callable[[str], str],
                 get: Callable[[str], str | None]) -> None:
    """Each stream's existing table, read by delta-rs (local folders, S3, Azure), must
    take the stream's rows (``_table_fit.py``); other locations are Spark's to read."""
    from pyspark.sql.types import StructType

    for stream, data_schema in streams.items():
        location = location_of(stream)
        folder = readable_folder(location, get)
        state = None if folder is None else _delta_rs.table_state(folder)
        if state is not None:
            refuse_misfits(StructType.fromJson(state.schema_json), data_schema, location,
                           stream)


def files_folder(spark: SparkSession, plan: StreamPlan, location: str,
                 config: Mapping[str, Any]) -> _Choice:
    """The folder tasks may write the files of the stream's table at ``location`` into,
    before the table is read (``folder`` None: Spark writes, for the reason given)."""
    if config.get("writer", "auto") != "auto":
        return _Choice(None, "writer: spark in the destination's config")
    if plan.stream.destination_sync_mode in (DestinationSyncMode.APPEND_DEDUP,
                                             DestinationSyncMode.HISTORY):
        return _Choice(None, f"{plan.stream.destination_sync_mode} commits through MERGE")
    return reachable_folder(spark, location, config)


def reachable_folder(spark: SparkSession, location: str, config: Mapping[str, Any]) -> _Choice:
    """The folder this process writes files into and commits to, as Spark's driver reaches
    the table at ``location`` (``folder`` None: only Spark reaches it, for the reason given);
    what any commit of Headwater's own asks, whatever the sync mode."""
    if config.get("writer", "auto") != "auto":
        return _Choice(None, "writer: spark in the destination's config")
    if local_folder(location) is None and not on_object_store(location):
        return _Choice(None, "object store path other than S3 and Azure (abfss://, "
                             "wasbs://): the task path writes local folders and those "
                             "stores only" + (_GCS_REASON if location.startswith("gs://")
                                              else ""))
    on_s3 = s3_bucket_and_key(location) is not None
    if on_s3 and not config.get("s3_conditional_writes", True):
        return _Choice(None, "s3_conditional_writes: false (a commit through delta-rs "
                             "needs the store's conditional writes)")
    refusal = _store_refusal(spark, location)
    if refusal:
        return _Choice(None, refusal)
    folder = _driver_folder(spark, location)
    if folder is None:
        return _Choice(None, "Spark Connect (the driver's filesystem is the server's)")
    return _Choice(folder, "")
