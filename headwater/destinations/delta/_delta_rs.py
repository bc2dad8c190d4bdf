"""The driver's side of executor-written files: one Delta commit through delta-rs.

Why a second Delta library: delta-spark commits only what Spark's own writer
produced and has no public call that adds files written elsewhere
(``_files.py`` says why the executors write them).  delta-rs (the ``deltalake``
package) has one, ``create_write_transaction``, with the same idempotency pair
(``app_transactions`` is Delta's ``txn`` action, what Spark's
``txnAppId``/``txnVersion`` write) and the same commit tag (``userMetadata``).
Both write the same log protocol, so their commits sit in one table's history:
Spark reads the table, and MERGE, replays and schema changes still go through
Spark.  Checked here: a table delta-spark 4.4 creates is protocol (1, 2), which
delta-rs writes; a table delta-rs creates is read by Spark as its own.

Only for tables on a filesystem every executor shares with the driver (a local
folder): object stores need delta-rs's own credentials and a commit
coordination story for S3, which Spark's writer already has.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

#: Checked before any Spark or delta-rs call, so a connection file can say
#: ``file:///...`` as well as a plain path.
_FILE_SCHEME = "file://"


def local_folder(location: str) -> str | None:
    """The local path of ``location``, or None when it is not on the local filesystem."""
    if location.startswith(_FILE_SCHEME):
        return location[len(_FILE_SCHEME):]
    return None if "://" in location else location


@dataclass(frozen=True)
class TableState:
    """What preparing a stream's table needs to know of it."""

    #: The table's schema in Spark's JSON form (Delta's ``schemaString``).
    schema_json: dict[str, Any]
    properties: dict[str, str]


def table_state(folder: str) -> TableState | None:
    """The Delta table at ``folder``, or None when there is none."""
    from deltalake import DeltaTable

    if not DeltaTable.is_deltatable(folder):
        return None
    table = DeltaTable(folder)
    configuration = table.metadata().configuration or {}
    return TableState(schema_json=json.loads(table.schema().to_json()),
                      properties={k: v for k, v in configuration.items() if v is not None})


def create_table(folder: str, schema: pa.Schema, properties: Mapping[str, str]) -> None:
    """Create an empty table (every column nullable, as Spark's writer makes them)."""
    from deltalake import DeltaTable

    nullable = pa.schema([field.with_nullable(True) for field in schema])
    DeltaTable.create(folder, schema=nullable, mode="ignore", configuration=dict(properties))


@dataclass(frozen=True)
class WrittenFile:
    """One file an executor wrote (a row of ``_files.FILE_SCHEMA``)."""

    path: str
    size: int
    modified_ms: int
    rows: int
    rejected: int
    stats: str


def commit_files(folder: str, files: Sequence[WrittenFile], *, mode: str, app_id: str,
                 version: int, tag: str) -> bool:
    """Add ``files`` in one commit (``mode`` "overwrite" removes the rest); False: done before.

    As Spark's writer does with ``txnAppId``/``txnVersion``, nothing is committed
    when the table already holds ``version`` (or a later one) for ``app_id``.
    """
    from deltalake import CommitProperties, DeltaTable, Transaction
    from deltalake.transaction import AddAction, RemoveAction

    table = DeltaTable(folder)
    done = table.transaction_version(app_id)
    if done is not None and done >= version:
        return False
    now_ms = int(time.time() * 1000)
    actions: list[AddAction | RemoveAction] = [
        AddAction(f.path, f.size, {}, f.modified_ms or now_ms, True, f.stats) for f in files]
    table.create_write_transaction(
        actions, mode=mode, schema=table.schema(),
        commit_properties=CommitProperties(
            custom_metadata={"userMetadata": tag},
            app_transactions=[Transaction(app_id, version, now_ms)]))
    return True


def history(folder: str, latest: int | None = None) -> list[dict[str, Any]]:
    """The table's commits, newest first, each with ``version``, ``userMetadata``, metrics."""
    from deltalake import DeltaTable

    return DeltaTable(folder).history(latest)
