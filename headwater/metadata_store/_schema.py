"""The metadata store's tables, and how its database is opened.

Portability rules (SQLite embedded, PostgreSQL for teams): JSON is stored as
TEXT, timestamps are written as UTC and read back as aware UTC datetimes, no
column is named after a reserved word, and read-modify-write sequences run
inside one transaction.  SQLite gets three things on every connection:

* WAL journal, so readers never block the writer and the writer never blocks
  readers;
* a busy timeout, so two processes writing at the same moment wait for each
  other instead of failing with "database is locked";
* SQLAlchemy emits ``BEGIN`` itself (``BEGIN IMMEDIATE`` for writes) instead of
  the sqlite3 driver's legacy mode, which starts no transaction for ``SELECT``
  and so would make a read-then-write sequence non-atomic.

``SCHEMA_VERSION`` is stored in the ``meta`` table when the store is created;
a later release that changes a table bumps it and migrates older stores when it
opens them (:data:`MIGRATIONS`): version 2 added ``run_logs``, version 3
``runs.finished_seq`` (see :func:`next_finished_seq`), version 4
``checkpoint_figures``.  A store newer than this code is refused, so an older
Headwater never writes a layout it does not know.
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy import exc as sa_exc
from sqlalchemy.engine import Connection, Dialect, Engine
from sqlalchemy.engine.url import URL

from headwater.config import read_database_url
from headwater.errors import HeadwaterError, MetadataStoreError
from headwater.metadata_store._models import FINISHED_STATUSES

#: Version of the table layout below; stored in ``meta`` under ``schema_version``.
SCHEMA_VERSION = 4

#: The ``meta`` key of the last ``runs.finished_seq`` handed out (see :func:`next_finished_seq`).
FINISHED_SEQ_KEY = "finished_seq"

#: How long a SQLite write waits for another process's write to finish.
SQLITE_BUSY_TIMEOUT_S = 30.0

#: Attempts at a write transaction that lost a race on a primary key.
_CONFLICT_RETRIES = 5

#: Execution option that makes SQLite start the transaction with ``BEGIN IMMEDIATE``.
_WRITE_OPTION = "headwater_write"

_T = TypeVar("_T")


class JSONText(sa.types.TypeDecorator[Any]):
    """A JSON value stored as TEXT, the same way on every database.

    SQL ``NULL`` stands for Python ``None``.  ``NaN`` and non-JSON values are
    refused when written, so whatever was stored reads back unchanged.
    """

    impl = sa.Text
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> str | None:
        if value is None:
            return None
        return json.dumps(value, allow_nan=False, separators=(",", ":"))

    def process_result_value(self, value: Any, dialect: Dialect) -> Any:
        return None if value is None else json.loads(value)


class UTCDateTime(sa.types.TypeDecorator[datetime]):
    """An aware datetime, stored as UTC and read back as UTC.

    SQLite keeps no time zone, so the value is stored naive-in-UTC there and
    given its zone back when read; PostgreSQL stores ``timestamptz``.
    """

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError(f"naive datetime {value!r}: the metadata store keeps UTC times only")
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


_NAME = sa.String(255)
_RUN_ID = sa.String(64)
_STATUS = sa.String(16)

metadata = sa.MetaData()

#: One row per setting of the store itself: ``schema_version``, ``store_id``, ``created_at``.
meta = sa.Table(
    "meta",
    metadata,
    sa.Column("key", sa.String(64), primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

#: The current state of each stream.  A reset deletes the row.
states = sa.Table(
    "states",
    metadata,
    sa.Column("connection", _NAME, primary_key=True),
    sa.Column("stream", _NAME, primary_key=True),
    sa.Column("state", JSONText, nullable=True),
    sa.Column("run_id", _RUN_ID, nullable=True),
    sa.Column("checkpoint_index", sa.BigInteger, nullable=True),
    sa.Column("updated_at", UTCDateTime, nullable=False),
)

#: Every state ever saved (and every reset, as a ``NULL`` state), oldest first by ``id``.
state_history = sa.Table(
    "state_history",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("connection", _NAME, nullable=False),
    sa.Column("stream", _NAME, nullable=False),
    sa.Column("state", JSONText, nullable=True),
    sa.Column("run_id", _RUN_ID, nullable=True),
    sa.Column("checkpoint_index", sa.BigInteger, nullable=True),
    sa.Column("saved_at", UTCDateTime, nullable=False),
    sa.Index("ix_state_history_stream", "connection", "stream", "id"),
)

#: The next free checkpoint index of each (connection, stream); never reset.
checkpoint_counters = sa.Table(
    "checkpoint_counters",
    metadata,
    sa.Column("connection", _NAME, primary_key=True),
    sa.Column("stream", _NAME, primary_key=True),
    sa.Column("next_index", sa.BigInteger, nullable=False),
)

runs = sa.Table(
    "runs",
    metadata,
    sa.Column("run_id", _RUN_ID, primary_key=True),
    sa.Column("connection", _NAME, nullable=False),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("status", _STATUS, nullable=False),
    sa.Column("started_at", UTCDateTime, nullable=False),
    sa.Column("ended_at", UTCDateTime, nullable=True),
    sa.Column("plan", JSONText, nullable=False),
    sa.Column("state_before", JSONText, nullable=False),
    sa.Column("state_after", JSONText, nullable=True),
    sa.Column("stats", JSONText, nullable=True),
    sa.Column("error", sa.Text, nullable=True),
    sa.Column("config_redacted", JSONText, nullable=False),
    # Set once, in the transaction that finishes the run (see next_finished_seq).
    sa.Column("finished_seq", sa.BigInteger, nullable=True),
    sa.Index("ix_runs_connection_started", "connection", "started_at"),
    sa.Index("ix_runs_connection_status", "connection", "status"),
)

#: The finished runs after a given one, and the unfinished ones (``IS NULL``), by index.
ix_runs_finished_seq = sa.Index("ix_runs_finished_seq", runs.c.finished_seq)

attempts = sa.Table(
    "attempts",
    metadata,
    sa.Column("run_id", _RUN_ID, sa.ForeignKey("runs.run_id"), primary_key=True),
    sa.Column("number", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("status", _STATUS, nullable=False),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("host", _NAME, nullable=False),
    sa.Column("started_at", UTCDateTime, nullable=False),
    sa.Column("ended_at", UTCDateTime, nullable=True),
    sa.Column("error", sa.Text, nullable=True),
)

checkpoints = sa.Table(
    "checkpoints",
    metadata,
    sa.Column("run_id", _RUN_ID, sa.ForeignKey("runs.run_id"), primary_key=True),
    sa.Column("stream", _NAME, primary_key=True),
    sa.Column("checkpoint_index", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("checkpoint_id", sa.Text, nullable=False),
    sa.Column("status", _STATUS, nullable=False),
    sa.Column("stats", JSONText, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
)

#: A connector's own state per partition of a checkpoint, written while the
#: checkpoint's write job runs and before its commit (see
#: :mod:`headwater.engine._own_state`): a resumed attempt that finds the commit
#: finds these states with it.
partition_states = sa.Table(
    "partition_states",
    metadata,
    sa.Column("run_id", _RUN_ID, sa.ForeignKey("runs.run_id"), primary_key=True),
    sa.Column("stream", _NAME, primary_key=True),
    sa.Column("checkpoint_index", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("partition_id", sa.Text, primary_key=True),
    sa.Column("state", JSONText, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
)

#: Each checkpoint's summed figures (and expectation counts), written with its row of
#: ``checkpoints`` in the same transaction.  Why apart: a checkpoint's ``stats`` also holds
#: its partition list and per-partition figures, most of its size (2.4 KB a checkpoint of ten
#: partitions), and the first ``/metrics`` scrape of a process sums every checkpoint: reading
#: 100,000 of those rows took 5 s, these a fraction of a second.
checkpoint_figures = sa.Table(
    "checkpoint_figures",
    metadata,
    sa.Column("run_id", _RUN_ID, sa.ForeignKey("runs.run_id"), primary_key=True),
    sa.Column("stream", _NAME, primary_key=True),
    sa.Column("checkpoint_index", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("status", _STATUS, nullable=False),
    sa.Column("records_written", sa.BigInteger, nullable=False),
    sa.Column("records_rejected", sa.BigInteger, nullable=False),
    sa.Column("bytes", sa.BigInteger, nullable=False),
    sa.Column("expectations", JSONText, nullable=True),
)

#: The figures of ``checkpoint_figures`` a checkpoint's ``stats`` holds.
SUMMED_FIGURES = ("records_written", "records_rejected", "bytes")


def checkpoint_figures_values(status: str, stats: dict[str, Any]) -> dict[str, Any]:
    """The ``checkpoint_figures`` columns (but the key) of a checkpoint's ``stats``."""
    return {"status": status, **{key: int(stats.get(key) or 0) for key in SUMMED_FIGURES},
            "expectations": stats.get("expectations") or None}


#: The log lines a run emitted while it ran (masked), ``seq`` from 1 in emission
#: order.  Bounded per run: the first and the last lines are kept and the lines
#: between are deleted as newer ones arrive (:meth:`MetadataStore.append_run_logs`).
run_logs = sa.Table(
    "run_logs",
    metadata,
    sa.Column("run_id", _RUN_ID, sa.ForeignKey("runs.run_id"), primary_key=True),
    sa.Column("seq", sa.Integer, primary_key=True, autoincrement=False),
    sa.Column("at", UTCDateTime, nullable=False),
    sa.Column("level", sa.String(16), nullable=False),
    sa.Column("logger", _NAME, nullable=False),
    sa.Column("message", sa.Text, nullable=False),
)

#: Records read so far by the partitions of a running run's checkpoints that have not
#: ended, as the tasks report them every few seconds (``headwater.engine._live_progress``):
#: the page and ``/metrics`` read them from here, whichever process runs the sync.  The run
#: replaces its rows as figures come in, drops a checkpoint's when it commits or fails, and
#: all of them when it ends.  A table added without a version of its own: a writer's
#: ``create_all`` adds it to an older store, and readers take a store without it as one
#: with no live figure (:func:`has_run_progress`).
run_progress = sa.Table(
    "run_progress",
    metadata,
    sa.Column("run_id", _RUN_ID, sa.ForeignKey("runs.run_id"), primary_key=True),
    sa.Column("stream", _NAME, primary_key=True),
    sa.Column("checkpoint_index", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("partition_id", sa.String(512), primary_key=True),
    sa.Column("records", sa.BigInteger, nullable=False),
    sa.Column("updated_at", UTCDateTime, nullable=False),
)


def has_run_progress(conn: Connection) -> bool:
    """Whether the store holds ``run_progress`` (one a writer of this release opened)."""
    return sa.inspect(conn).has_table(run_progress.name)


#: At most one row per connection: the primary key is what makes the lock exclusive.
locks = sa.Table(
    "locks",
    metadata,
    sa.Column("connection", _NAME, primary_key=True),
    sa.Column("token", sa.String(32), nullable=False),
    sa.Column("run_id", _RUN_ID, nullable=True),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("host", _NAME, nullable=False),
    sa.Column("started_at", UTCDateTime, nullable=False),
    sa.Column("heartbeat_at", UTCDateTime, nullable=False),
)


def utcnow() -> datetime:
    """The current time, aware, in UTC: the only clock the store uses."""
    return datetime.now(UTC)


def next_finished_seq(conn: Connection) -> int:
    """The ``finished_seq`` of a run finishing in ``conn``'s write transaction.

    Why: a finished run never changes, so whoever aggregates runs (the
    ``/metrics`` figures) can keep the finished runs' share and, on each
    call, read only the runs finished since (``finished_seq`` above the
    highest it has seen) plus the unfinished ones (``finished_seq`` null).
    That is exact only if every reader's snapshot holds a *prefix* of the
    numbers: the counter is a row of ``meta`` that this ``UPDATE`` locks
    until the transaction commits (SQLite: the whole file, from ``BEGIN
    IMMEDIATE``), so number ``n`` is committed before any writer can take
    ``n + 1``.  A database sequence would not do: it hands numbers out in
    the order transactions ask, not the order they commit.
    """
    key = meta.c.key == FINISHED_SEQ_KEY
    conn.execute(sa.update(meta).where(key).values(
        value=sa.cast(sa.cast(meta.c.value, sa.BigInteger) + 1, sa.Text)))
    return int(conn.execute(sa.select(meta.c.value).where(key)).scalar_one())


def _add_finished_seq(conn: Connection) -> None:
    """Version 3: ``runs.finished_seq``, 0 for the runs already finished (they come
    before any run finished from now on), its index, and its counter."""
    conn.execute(sa.text("ALTER TABLE runs ADD COLUMN finished_seq BIGINT"))
    conn.execute(sa.update(runs).where(runs.c.status.in_(sorted(FINISHED_STATUSES)))
                 .values(finished_seq=0))
    ix_runs_finished_seq.create(conn)
    conn.execute(sa.insert(meta).values(key=FINISHED_SEQ_KEY, value="0"))


#: What opening a store of an older version does to bring it to each newer one, in
#: order.  New tables need no step of their own: ``create_all`` adds every missing
#: table first; a step here alters existing tables.
MIGRATIONS: dict[int, Callable[[Connection], None]] = {
    2: lambda conn: None,  # run_logs (a new table)
    3: _add_finished_seq,
    4: lambda conn: _fill_checkpoint_figures(conn),
}


def _fill_checkpoint_figures(conn: Connection) -> None:
    """Version 4: ``checkpoint_figures`` of every checkpoint already recorded (once, when
    a writer first opens the store; made afresh, so a store brought back from a later
    layout and opened again is filled exactly)."""
    conn.execute(sa.delete(checkpoint_figures))
    c = checkpoints
    rows = conn.execute(sa.select(c.c.run_id, c.c.stream, c.c.checkpoint_index, c.c.status,
                                  c.c.stats))
    while batch := rows.fetchmany(1000):
        conn.execute(sa.insert(checkpoint_figures), [
            {"run_id": row.run_id, "stream": row.stream,
             "checkpoint_index": row.checkpoint_index,
             **checkpoint_figures_values(row.status, row.stats or {})} for row in batch])


def database_url(url: str) -> URL:
    """``url`` as the store opens it, refused here when no installed driver reads it.

    Why apart from :class:`Database`: ``headwater validate`` and ``check`` refuse a
    store ``sync`` could not open (a misspelt scheme, a missing driver) without
    opening it, connecting or creating a SQLite file's folder.
    """
    parsed, problem = read_database_url(url)
    if parsed is not None and parsed.drivername == "postgresql":
        # SQLAlchemy's default PostgreSQL driver is psycopg2; Headwater ships psycopg 3.
        parsed, problem = read_database_url(parsed.set(drivername="postgresql+psycopg"))
    if parsed is None or problem is not None:
        raise MetadataStoreError(f"the metadata store URL: {problem}")
    return parsed


class WriteConflict(Exception):
    """A write lost a race with another writer; :meth:`Database.write` retries it.

    Raised for unique-key violations, and by a transaction function itself
    when a conditional update finds the row changed under it.
    """


class Database:
    """An engine on the store's database plus the two ways to use it.

    :meth:`read` and :meth:`write` run a function inside one transaction and
    translate database errors into :class:`MetadataStoreError` naming the store
    (password hidden).  A write that fails on a unique key, because another
    process inserted the same row first, is retried from the start, so
    "update, else insert" is a correct upsert on every database.
    """

    def __init__(self, url: str, *, create: bool = True) -> None:
        self.url: URL = database_url(url)
        self.safe_url = self.url.render_as_string(hide_password=True)
        self.is_sqlite = self.url.get_backend_name() == "sqlite"
        #: False: a store opened to be read; a SQLite file that is missing stays missing.
        self.create = create
        try:
            self.engine: Engine = self._create_engine()
        except (sa_exc.SQLAlchemyError, ImportError) as exc:
            raise MetadataStoreError(
                f"cannot open the metadata store {self.safe_url}: {exc}; "
                "for PostgreSQL install a driver such as psycopg"
            ) from exc

    @property
    def missing(self) -> bool:
        """A store opened to be read whose SQLite file does not exist (yet)."""
        return self.is_sqlite and not self.create and not Path(self.url.database or "").exists()

    def _create_engine(self) -> Engine:
        if not self.is_sqlite:
            return sa.create_engine(self.url, pool_pre_ping=True)
        database = self.url.database or ""
        if database in ("", ":memory:") or database.startswith("file:"):
            raise MetadataStoreError(
                f"the metadata store needs a SQLite file, not {self.safe_url}: "
                "several processes and threads share it"
            )
        path = Path(database).expanduser()
        if self.create:
            path.parent.mkdir(parents=True, exist_ok=True)
            engine = sa.create_engine(self.url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S})
        else:
            # sqlite3 creates a missing file on connect; ``mode=rw`` refuses instead, so a
            # reader pointed at the wrong path sees an error rather than an empty store.
            # No pool: a pooled connection would go on reading a file deleted or replaced
            # since (its old inode), and a reader opens one per page or scrape anyway.
            engine = sa.create_engine(self.url, poolclass=sa.pool.NullPool,
                                      creator=lambda: sqlite3.connect(
                                          f"{path.absolute().as_uri()}?mode=rw", uri=True,
                                          timeout=SQLITE_BUSY_TIMEOUT_S,
                                          check_same_thread=False))

        @sa.event.listens_for(engine, "connect")
        def _on_connect(dbapi_connection: Any, _record: Any) -> None:
            # Take BEGIN away from the driver (see the module docstring).
            dbapi_connection.isolation_level = None
            cursor = dbapi_connection.cursor()
            if self.create:  # a reader changes nothing (a store it opens is WAL already)
                cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA foreign_keys=ON")
            cursor.close()

        @sa.event.listens_for(engine, "begin")
        def _on_begin(conn: Connection) -> None:
            # IMMEDIATE takes the write lock up front: a read-then-write
            # transaction can then never fail half way on a lock upgrade.
            write = conn.get_execution_options().get(_WRITE_OPTION, False)
            conn.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

        return engine

    def read(self, fn: Callable[[Connection], _T], *, snapshot: bool = False) -> _T:
        """Run ``fn`` in a read-only transaction and return what it returns.

        ``snapshot``: every statement of ``fn`` sees the database as of the same
        moment.  A SQLite read transaction always does (WAL); PostgreSQL's
        default (read committed) lets each statement see later commits, so
        there the transaction is made ``REPEATABLE READ``.
        """
        with self._errors(), self.engine.connect() as conn:
            if snapshot and not self.is_sqlite:
                conn.execution_options(isolation_level="REPEATABLE READ")
            with conn.begin():
                return fn(conn)

    def write(self, fn: Callable[[Connection], _T]) -> _T:
        """Run ``fn`` in one write transaction, retried if it loses a key race.

        ``fn`` must only touch the database (it may run more than once).
        Everything it wrote is committed together, or nothing is.
        """
        last: BaseException | None = None
        for _ in range(_CONFLICT_RETRIES):
            try:
                with self._errors(), self.engine.connect() as conn:
                    conn.execution_options(**{_WRITE_OPTION: True})
                    with conn.begin():
                        return fn(conn)
            except WriteConflict as exc:
                last = exc.__cause__
        raise MetadataStoreError(
            f"metadata store {self.safe_url}: a write still conflicted with other writers "
            f"after {_CONFLICT_RETRIES} tries" + (f": {last}" if last is not None else "")
        ) from last

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except HeadwaterError:
            raise
        except sa_exc.IntegrityError as exc:
            raise WriteConflict() from exc
        except sa_exc.OperationalError as exc:
            detail = str(exc.orig)
            if self.missing:
                detail = "no such file (no sync has written this store, or the path is wrong)"
            elif self.is_sqlite and "locked" in detail:
                detail = (
                    f"another process kept the database file busy for more than "
                    f"{SQLITE_BUSY_TIMEOUT_S:.0f} s ({detail})"
                )
            raise MetadataStoreError(f"metadata store {self.safe_url}: {detail}") from exc
        except sa_exc.StatementError as exc:
            # Also raised for values the column types refuse (non-JSON, naive datetimes).
            raise MetadataStoreError(f"metadata store {self.safe_url}: {exc.orig}") from exc
        except sa_exc.SQLAlchemyError as exc:
            raise MetadataStoreError(f"metadata store {self.safe_url}: {exc}") from exc

    def create_schema(self) -> str:
        """Create missing tables and the ``meta`` rows; return the store id.

        Safe to call from several processes at once: creation runs in one write
        transaction, and a process that loses the race retries and finds the
        tables there.  Raises if the store was written by a newer layout.
        """

        def create(conn: Connection) -> str:
            metadata.create_all(conn, checkfirst=True)
            rows: dict[str, str] = {
                key: value for key, value in conn.execute(sa.select(meta.c.key, meta.c.value))
            }
            if "store_id" not in rows:
                rows = {
                    "schema_version": str(SCHEMA_VERSION),
                    "store_id": str(uuid.uuid4()),
                    "created_at": utcnow().isoformat(),
                    FINISHED_SEQ_KEY: "0",
                }
                conn.execute(sa.insert(meta), [{"key": k, "value": v} for k, v in rows.items()])
            version = int(rows["schema_version"])
            if version > SCHEMA_VERSION:
                raise MetadataStoreError(
                    f"metadata store {self.safe_url} has schema version {version}, newer than "
                    f"this Headwater understands ({SCHEMA_VERSION}); upgrade Headwater"
                )
            if version < SCHEMA_VERSION:
                for step in range(version + 1, SCHEMA_VERSION + 1):
                    MIGRATIONS[step](conn)
                conn.execute(sa.update(meta).where(meta.c.key == "schema_version")
                             .values(value=str(SCHEMA_VERSION)))
            return rows["store_id"]

        try:
            return self.write(create)
        except MetadataStoreError as exc:
            # PostgreSQL: a concurrent CREATE TABLE fails rather than waits; try once more.
            if isinstance(exc.__cause__, sa_exc.ProgrammingError | sa_exc.IntegrityError):
                return self.write(create)
            raise

    def dispose(self) -> None:
        """Close every pooled connection (open transactions are rolled back)."""
        self.engine.dispose()
