"""The connection lock: at most one sync of a connection at a time.

Why a row and not a file lock: the store may be PostgreSQL shared by several
hosts, and a row in ``locks`` (primary key = connection) excludes a second
holder on every database, because a second ``INSERT`` of the same key fails.

A holder that dies leaves its row behind, so a row can be *stale*:

* its host is this host and its pid is no longer alive (``os.kill(pid, 0)``;
  a zombie counts as dead), or
* its heartbeat is older than ``stale_after_s`` (the only test possible for a
  holder on another host, and the backstop for a reused pid).

A stale row is taken over with a WARNING saying whose it was and why.  While
held, a daemon thread refreshes ``heartbeat_at``; if it finds the row gone or
replaced (someone judged us stale), it marks the handle :attr:`LockHandle.lost`
and stops.  Heartbeats are compared with the clock of the process that reads
them, so hosts sharing a store need clocks in step (NTP) to well within
``stale_after_s``.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from headwater._processes import pid_alive
from headwater.errors import ConnectionLockedError, MetadataStoreError
from headwater.metadata_store._models import LockHolder, record_from_row
from headwater.metadata_store._schema import Database, WriteConflict, locks, utcnow

logger = logging.getLogger("headwater.metadata_store")

#: How often a held lock's heartbeat is refreshed (at most; see :func:`hold_lock`).
HEARTBEAT_INTERVAL_S = 30.0


def this_host() -> str:
    """The name this process records as its host in locks and attempts."""
    return socket.gethostname()


def stale_reason(
    holder: LockHolder, *, now: datetime, stale_after_s: float, host: str
) -> str | None:
    """Why ``holder``'s lock may be taken over, or ``None`` if it must be respected."""
    if holder.host == host and not pid_alive(holder.pid):
        return "that process is no longer running"
    age_s = (now - holder.heartbeat_at).total_seconds()
    if age_s > stale_after_s:
        return f"its last heartbeat was {age_s:.1f} s ago (stale after {stale_after_s:g} s)"
    return None


def _format_time(value: datetime) -> str:
    return value.strftime("%Y-%m-%dT%H:%M:%SZ")


def describe_holder(holder: LockHolder) -> str:
    """``pid 123 on host h since 2026-...Z (run r)``: who holds a lock, for messages."""
    run = f" (run {holder.run_id})" if holder.run_id else ""
    return f"pid {holder.pid} on host {holder.host} since {_format_time(holder.started_at)}{run}"


def _holder_from_row(row: sa.Row[tuple[object, ...]]) -> LockHolder:
    return record_from_row(LockHolder, row)


def read_holder(conn: Connection, connection: str) -> LockHolder | None:
    """The current row of ``connection``'s lock, stale or not."""
    row = conn.execute(sa.select(locks).where(locks.c.connection == connection)).first()
    return None if row is None else _holder_from_row(row)


class LockHandle:
    """The held lock of one connection, as returned by ``MetadataStore.lock``.

    Valid inside the ``with`` block only; the lock is released when the block
    exits, also on an exception.  ``lost`` turns true if the heartbeat finds
    that another process took the lock over (after judging this one stale);
    the holder must then stop committing, and :meth:`ensure_held` says so.
    """

    def __init__(self, db: Database, holder: LockHolder, token: str) -> None:
        self._db = db
        self._token = token
        self._holder = holder
        self._lost = threading.Event()

    @property
    def connection(self) -> str:
        return self._holder.connection

    @property
    def holder(self) -> LockHolder:
        """This process's lock row as written when it was acquired (``run_id`` kept current)."""
        return self._holder

    @property
    def run_id(self) -> str | None:
        return self._holder.run_id

    @property
    def lost(self) -> bool:
        return self._lost.is_set()

    def _mine(self) -> sa.ColumnElement[bool]:
        return sa.and_(locks.c.connection == self.connection, locks.c.token == self._token)

    def set_run_id(self, run_id: str) -> None:
        """Record which run this lock protects, so a blocked process can name it."""

        def update(conn: Connection) -> int:
            return conn.execute(sa.update(locks).where(self._mine()).values(run_id=run_id)).rowcount

        if self._db.write(update) == 0:
            self._lost.set()
            self.ensure_held()
        self._holder = dataclasses.replace(self._holder, run_id=run_id)

    def ensure_held(self) -> None:
        """Raise :class:`ConnectionLockedError` if this lock is no longer ours."""
        if not self._lost.is_set():
            held = self._db.read(
                lambda conn: conn.execute(sa.select(locks.c.token).where(self._mine())).first()
            )
            if held is not None:
                return
            self._lost.set()
        raise ConnectionLockedError(
            f"the lock of connection '{self.connection}' was taken over by another process "
            "(this one was judged stale); stop this sync and check that process",
            connection=self.connection,
        )

    def heartbeat(self) -> bool:
        """Refresh ``heartbeat_at`` now; ``False`` (and :attr:`lost`) if the lock is gone."""
        now = utcnow()

        def beat(conn: Connection) -> int:
            return conn.execute(
                sa.update(locks).where(self._mine()).values(heartbeat_at=now)
            ).rowcount

        if self._db.write(beat) == 0:
            self._lost.set()
            return False
        return True

    def _release(self) -> None:
        self._db.write(lambda conn: conn.execute(sa.delete(locks).where(self._mine())))


class _Heartbeat:
    """A daemon thread that keeps one held lock fresh until stopped."""

    def __init__(self, handle: LockHandle, interval_s: float) -> None:
        self._handle = handle
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"headwater-lock-{handle.connection}", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=max(self._interval_s, 5.0))

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            try:
                if not self._handle.heartbeat():
                    logger.error(
                        "lost the lock of connection '%s': another process took it over",
                        self._handle.connection,
                    )
                    return
            except MetadataStoreError as exc:
                # Transient store trouble: try again next beat; staleness is judged
                # only after stale_after_s, several beats from now.
                logger.warning(
                    "could not refresh the lock of connection '%s': %s",
                    self._handle.connection,
                    exc,
                )


def _acquire(
    db: Database, connection: str, *, run_id: str | None, stale_after_s: float
) -> LockHandle:
    host = this_host()
    pid = os.getpid()
    token = uuid.uuid4().hex

    def take(conn: Connection) -> tuple[LockHolder, LockHolder | None, str | None]:
        now = utcnow()
        row = conn.execute(sa.select(locks).where(locks.c.connection == connection)).first()
        previous = reason = None
        if row is not None:
            previous = _holder_from_row(row)
            reason = stale_reason(previous, now=now, stale_after_s=stale_after_s, host=host)
            if reason is None:
                raise ConnectionLockedError(
                    f"connection '{connection}' is already being synced by "
                    f"{describe_holder(previous)}; wait for it to finish, or stop that process",
                    connection=connection,
                )
            # Delete exactly the row judged stale: if it changed meanwhile, judge again.
            deleted = conn.execute(
                sa.delete(locks).where(
                    locks.c.connection == connection, locks.c.token == row._mapping["token"]
                )
            ).rowcount
            if deleted != 1:
                raise WriteConflict()
        holder = LockHolder(
            connection=connection,
            pid=pid,
            host=host,
            started_at=now,
            heartbeat_at=now,
            run_id=run_id,
        )
        conn.execute(sa.insert(locks).values(token=token, **dataclasses.asdict(holder)))
        return holder, previous, reason

    holder, previous, reason = db.write(take)
    if previous is not None:
        logger.warning(
            "took over the stale lock of connection '%s' from %s: %s",
            connection,
            describe_holder(previous),
            reason,
        )
    return LockHandle(db, holder, token)


@contextmanager
def hold_lock(
    db: Database,
    connection: str,
    *,
    run_id: str | None = None,
    stale_after_s: float = 600.0,
    heartbeat_s: float = HEARTBEAT_INTERVAL_S,
) -> Iterator[LockHandle]:
    """Hold ``connection``'s lock for the ``with`` block; see the module docstring.

    The heartbeat runs every ``heartbeat_s`` seconds, or more often if needed
    to beat at least three times within ``stale_after_s``.
    """
    if stale_after_s <= 0:
        raise ValueError(f"stale_after_s must be positive, got {stale_after_s}")
    handle = _acquire(db, connection, run_id=run_id, stale_after_s=stale_after_s)
    heartbeat = _Heartbeat(handle, interval_s=min(heartbeat_s, stale_after_s / 3))
    heartbeat.start()
    try:
        yield handle
    except BaseException:
        heartbeat.stop()
        try:
            handle._release()
        except MetadataStoreError as exc:
            # Do not hide the error that ended the block; the row goes stale instead.
            logger.error("could not release the lock of connection '%s': %s", connection, exc)
        raise
    heartbeat.stop()
    handle._release()
