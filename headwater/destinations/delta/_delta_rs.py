"""The driver's side of executor-written files: one Delta commit through delta-rs.

Why a second Delta library: delta-spark commits only what Spark's own writer
produced and has no public call that adds files written elsewhere
(``_table_files/_parquet.py`` says why the executors write them).  delta-rs (the ``deltalake``
package) has one, ``create_write_transaction``, with the same idempotency pair
(``app_transactions`` is Delta's ``txn`` action, what Spark's
``txnAppId``/``txnVersion`` write) and the same commit tag (``userMetadata``).
Both write the same log protocol, so their commits sit in one table's history:
Spark reads the table, and MERGE, replays and schema changes still go through
Spark.  Checked here: a table delta-spark 4.4 creates is protocol (1, 2), which
delta-rs writes; a table delta-rs creates is read by Spark as its own.

For tables in a local folder every executor shares with the driver, and on S3
(and S3-compatible stores) and Azure, where delta-rs commits with the store's
conditional write (``_table_files/_store.py`` says why that is safe, and what a store without
it gets; GCS stays on Spark's writer).
Every function takes a :class:`TableFolder` (or a local path).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from headwater.destinations._table_files._parquet import WrittenFile
from headwater.destinations._table_files._store import TableFolder
from headwater.destinations.delta._sql import TableDetail
from headwater.destinations.delta._table_features import TableProtocol
from headwater.errors import DestinationError

if TYPE_CHECKING:
    from deltalake import DeltaTable

#: Commits between two log checkpoints, set on every table delta-rs creates.
#: Delta's own default, which Spark applies to tables it creates; without it,
#: delta-rs checkpoints every 100 commits, and every reader of a table only
#: delta-rs commits to would replay up to 100 JSON commits.  delta-rs honours
#: the property when it commits (its post-commit hook writes the checkpoint).
CHECKPOINT_INTERVAL = 10
CHECKPOINT_INTERVAL_PROPERTY = "delta.checkpointInterval"


@dataclass(frozen=True)
class TableState:
    """What preparing a stream's table needs to know of it."""

    #: The table's schema in Spark's JSON form (Delta's ``schemaString``).
    schema_json: dict[str, Any]
    properties: dict[str, str]
    #: What the table asks of its writers (``_table_features`` decides who may write it).
    protocol: TableProtocol


def _load(folder: str | TableFolder) -> DeltaTable | None:
    """The Delta table at ``folder`` at its latest version, or None when there is none."""
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    place = TableFolder.of(folder)
    try:
        return DeltaTable(place.uri, storage_options=place.storage_options())
    except TableNotFoundError:
        return None


def table_state(folder: str | TableFolder) -> TableState | None:
    """The Delta table at ``folder``, or None when there is none."""
    table = _load(folder)
    return None if table is None else _state_of(table)


#: The writer feature of a liquid-clustered table: its clustering columns are in a domain
#: metadata action delta-rs does not expose, so only Spark's ``DESCRIBE DETAIL`` names them.
_CLUSTERING_FEATURE = "clustering"


def table_detail(state: TableState) -> TableDetail | None:
    """What ``DESCRIBE DETAIL`` says of the table ``state`` describes, from its log; None
    for a table that may be clustered (Spark's to answer).

    Why: a sync's preparation of a table Spark writes (a MERGE's, or one off the task
    path's allowlist) needs only its properties and layout, and ``DESCRIBE DETAIL``
    through Spark cost 0.6-2.5 s per sync (a Spark job reconstructing the snapshot)
    where delta-rs reads the log in milliseconds.  Both answer from the same log
    actions: ``properties`` is the metadata's configuration (Delta 4.4 adds no
    protocol entries to it) and the partition columns are the metadata's
    (``test_delta_prepare_from_log.py`` holds them equal on every table shape the
    sync meets).
    """
    if _CLUSTERING_FEATURE in state.protocol.writer_features:
        return None
    return TableDetail(properties=dict(state.properties),
                       partition_columns=tuple(state.protocol.partition_columns))


def file_count(folder: str | TableFolder) -> int:
    """How many data files the latest version of the table at ``folder`` holds (0 when
    there is no table): what ``DESCRIBE DETAIL``'s ``numFiles`` says, without its Spark
    job (a history sync asks before every commit)."""
    table = _load(folder)
    return 0 if table is None else len(table.file_uris())


def latest_state(folder: str | TableFolder) -> tuple[int, TableState] | None:
    """The latest version of the table at ``folder`` and its state at that version, from one
    load of its log (None when there is no table)."""
    table = _load(folder)
    return None if table is None else (table.version(), _state_of(table))


def latest_version(folder: str | TableFolder) -> int | None:
    """The latest commit version of the table at ``folder`` (None when there is none)."""
    table = _load(folder)
    return None if table is None else table.version()


def _state_of(table: DeltaTable) -> TableState:
    """The schema, configuration and protocol of ``table`` as loaded (no new read)."""
    metadata = table.metadata()
    configuration = metadata.configuration or {}
    properties = {k: v for k, v in configuration.items() if v is not None}
    schema_json = json.loads(table.schema().to_json())
    versions = table.protocol()
    protocol = TableProtocol(
        min_reader_version=versions.min_reader_version,
        min_writer_version=versions.min_writer_version,
        reader_features=tuple(versions.reader_features or ()),
        writer_features=tuple(versions.writer_features or ()),
        properties=properties, schema_json=schema_json,
        partition_columns=tuple(metadata.partition_columns or ()))
    return TableState(schema_json=schema_json, properties=properties, protocol=protocol)


def create_table(folder: str | TableFolder, schema: pa.Schema,
                 properties: Mapping[str, str]) -> TableState:
    """Create an empty table (every column nullable, as Spark's writer makes them).

    Its log is checkpointed every :data:`CHECKPOINT_INTERVAL` commits unless
    ``properties`` say otherwise.  Returns the state of the table now in the
    folder.  Of two processes creating one new table at once, one table results:
    version 0 is committed without retries (the loser's conditional put of it on
    S3, or its rename in a local folder, is refused), and the loser adopts the
    winner's table when its schema is the one wanted (:func:`_adopt`).  delta-rs's
    own retry would instead commit the create again as version 1: a second table
    id in the log, which readers that track the table (streaming, CDF) take for a
    replaced table.
    """
    from deltalake import CommitProperties, DeltaTable

    place = TableFolder.of(folder)
    nullable = pa.schema([field.with_nullable(True) for field in schema])
    configuration = {CHECKPOINT_INTERVAL_PROPERTY: str(CHECKPOINT_INTERVAL), **properties}
    try:
        return _state_of(DeltaTable.create(
            place.uri, schema=nullable, mode="error", configuration=configuration,
            storage_options=place.storage_options(),
            commit_properties=CommitProperties(max_commit_retries=0)))
    except Exception as exc:
        try:
            created = _load(place)
        except Exception:
            created = None
        if created is None:
            raise exc from None
        return _adopt(place, _state_of(created), nullable)


def _adopt(place: TableFolder, state: TableState, wanted: pa.Schema) -> TableState:
    """The table another process created first, when its schema is ``wanted``."""
    from deltalake import Schema

    wanted_json = json.loads(Schema.from_arrow(wanted).to_json())
    if state.schema_json == wanted_json:
        return state
    found = [f.get("name") for f in state.schema_json.get("fields", [])]
    raise DestinationError(
        f"another writer created the Delta table at {place.uri} at the same time with a "
        f"different schema (columns {found}; this sync's: "
        f"{[f.name for f in wanted]}, or the same columns with other types); run the sync "
        "again to evolve that table, or remove it if it is not wanted")


@dataclass(frozen=True)
class Committed:
    """What :func:`commit_files` did."""

    #: False: the table already held this transaction (an earlier attempt committed it,
    #: or the metadata store handed the version out again).
    made: bool
    #: The version of the commit made (None when none was, or it could not be read back).
    version: int | None = None
    #: When none was made: the ``txnVersion`` the table holds for the app id.
    held: int | None = None


def commit_files(folder: str | TableFolder, files: Sequence[WrittenFile], *, mode: str,
                 app_id: str, version: int, tag: str) -> Committed:
    """Add ``files`` in one commit (``mode`` "overwrite" removes the rest).

    As Spark's writer does with ``txnAppId``/``txnVersion``, nothing is committed
    when the table already holds ``version`` (or a later one) for ``app_id``.
    The table's state is loaded once; the commit's version is then read back from
    the commit file itself (:func:`_version_of`).
    """
    from deltalake import CommitProperties, Transaction
    from deltalake.transaction import AddAction, RemoveAction

    table = _load(folder)
    if table is None:
        raise FileNotFoundError(f"no Delta table at {folder}")
    done = table.transaction_version(app_id)
    if done is not None and done >= version:
        return Committed(made=False, held=done)
    read_version = table.version()
    now_ms = int(time.time() * 1000)
    actions: list[AddAction | RemoveAction] = [
        AddAction(f.path, f.size, {}, f.modified_ms or now_ms, True, f.stats) for f in files]
    table.create_write_transaction(
        actions, mode=mode, schema=table.schema(),
        commit_properties=CommitProperties(
            custom_metadata={"userMetadata": tag},
            app_transactions=[Transaction(app_id, version, now_ms)]))
    return Committed(made=True, version=_version_of(folder, read_version, app_id, version))


def transaction_version(folder: str | TableFolder, app_id: str) -> int | None:
    """The latest ``txnVersion`` the table at ``folder`` holds for ``app_id`` (None: none)."""
    table = _load(folder)
    return None if table is None else table.transaction_version(app_id)


def _version_of(folder: str | TableFolder, read_version: int, app_id: str,
                txn_version: int) -> int | None:
    """The version of the commit, made after ``read_version``, of ``app_id``'s ``txn_version``.

    delta-rs 1.6.6's ``create_write_transaction`` drops the version its commit
    got (it returns None and leaves the ``DeltaTable`` at the version it read),
    and lanes commit to one table side by side, so the version is found in the
    log: the commit files after the one read, in order, up to the first whose
    ``txn`` action is this one.  Without a concurrent commit that is one small
    file, the one just written; no table state is loaded again.
    """
    place = TableFolder.of(folder)
    candidate = read_version + 1
    while True:
        commit = place.read_text(commit_file(candidate))
        if commit is None:
            return None  # past the newest commit: not found (the log was changed under us)
        for line in commit.splitlines():  # one action per line
            if '"txn"' not in line:
                continue
            txn = json.loads(line).get("txn")
            if (isinstance(txn, dict) and txn.get("appId") == app_id
                    and txn.get("version") == txn_version):
                return candidate
        candidate += 1


def commit_file(version: int) -> str:
    """The log file of the commit of ``version``, relative to the table's folder
    (Delta names it by the zero-padded version)."""
    return f"_delta_log/{version:020d}.json"


def history(folder: str | TableFolder, latest: int | None = None,
            ) -> list[dict[str, Any]] | None:
    """The table's commits, newest first, each with ``version``, ``userMetadata``, metrics.

    None when ``folder`` holds no Delta table.  delta-rs 1.6.6 reads the commits
    up to the log's newest but numbers them down from the version it loaded, so
    a commit another lane makes between the two would shift every ``version`` by
    one: the history is read again until no commit came after the loaded version.
    """
    place = TableFolder.of(folder)
    while True:
        table = _load(place)
        if table is None:
            return None
        commits = table.history(latest)
        if not place.exists(commit_file(table.version() + 1)):
            return commits
