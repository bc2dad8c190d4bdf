"""The metadata store: state, checkpoint counters, runs, attempts, checkpoints, locks,
and connectors' own states staged before their checkpoint commits.

What it guarantees to the engine:

* Every method is one transaction: what it writes is durable when it returns,
  or nothing of it is.
* Checkpoint indices of one (connection, stream) only grow, across runs and
  resets: :meth:`MetadataStore.allocate_checkpoint_indices` hands out
  contiguous blocks that never overlap, even to concurrent processes.
* A stream's state never moves back to a lower checkpoint index
  (:meth:`MetadataStore.save_state` refuses), and every saved state is kept in
  ``state_history``.
* A run's plan is stored whole when the run is created and never changed, so
  a resumed attempt re-executes exactly the same checkpoints.
* Errors and figures of runs and attempts are stored masked (secrets and URI
  passwords, :func:`headwater.config.mask`), whoever records them: the store is
  read by every user of ``runs show`` and the web page.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from headwater.config import mask, mask_obj
from headwater.errors import MetadataStoreError
from headwater.metadata_store import _schema as t
from headwater.metadata_store._figures import FiguresCache, StoreFigures, read_figures
from headwater.metadata_store._lock import LockHandle, hold_lock, read_holder
from headwater.metadata_store._models import (
    ATTEMPT_END_STATUSES,
    CHECKPOINT_STATUSES,
    FINISHED_STATUSES,
    UNFINISHED_STATUSES,
    AttemptRecord,
    AttemptStatus,
    CheckpointRecord,
    CheckpointStatus,
    LiveFigure,
    LockHolder,
    RunLogLine,
    RunRecord,
    RunStatus,
    RunSummary,
    StateHistoryRecord,
    record_from_row,
)

#: The first index a (connection, stream) counter hands out.
FIRST_CHECKPOINT_INDEX = 1


def new_run_id(now: datetime) -> str:
    """``20261122T041500Z-1a2b3c``: sorts by start time, unique by its random tail."""
    return f"{now.strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(3)}"


class MetadataStore:
    """Where Headwater keeps everything about a connection that is not data.

    ``url`` is any SQLAlchemy URL: a SQLite file (the embedded default, see
    :meth:`default_url`; its folder is created) or PostgreSQL for a team.
    Tables are created on first use, unless ``create`` is false: a reader that
    must not mistake a wrong path for an empty store opens it so.  One instance
    may be shared by threads; several processes and hosts may share the database.

    Example::

        store = MetadataStore(MetadataStore.default_url(Path.cwd()))
        with store.lock("orders_to_lake") as lock:
            run_id = store.create_run("orders_to_lake", plan=plan,
                                      state_before=states, config_redacted=cfg)
            lock.set_run_id(run_id)
            attempt = store.start_attempt(run_id, pid=os.getpid(), host=host)
            ...
    """

    def __init__(self, url: str, *, create: bool = True) -> None:
        self._db = t.Database(url, create=create)
        #: ``create=False`` (a reader: the page, ``/metrics``): nothing is created or
        #: migrated, and a missing or empty store fails its reads instead of looking healthy.
        self._store_id = self._db.create_schema() if create else None
        self._figures = FiguresCache()  # for figures(): finished runs are read once

    @staticmethod
    def check_url(url: str) -> None:
        """Refuse (MetadataStoreError) a URL no installed driver reads, opening nothing."""
        t.database_url(url)

    @staticmethod
    def default_url(workdir: Path) -> str:
        """The embedded store of a project folder: ``<workdir>/.headwater/headwater.db``."""
        return f"sqlite:///{(Path(workdir) / '.headwater' / 'headwater.db').resolve()}"

    @property
    def url(self) -> str:
        """The store's URL with any password hidden, fit for messages."""
        return self._db.safe_url

    @property
    def store_id(self) -> str:
        """A UUID made once when the store was created; a new store gets a new one."""
        if self._store_id is None:
            m = t.meta
            query = sa.select(m.c.value).where(m.c.key == "store_id")
            self._store_id = str(self._db.read(lambda conn: conn.execute(query).scalar_one()))
        return self._store_id

    @property
    def missing(self) -> bool:
        """Opened to be read (``create=False``) and its SQLite file does not exist: no sync
        wrote it yet (or the path is wrong); every read fails until one does."""
        return self._db.missing

    def close(self) -> None:
        """Close the store's pooled connections (a later call opens new ones)."""
        self._db.dispose()

    def __enter__(self) -> MetadataStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- state ---------------------------------------------------------------

    def get_state(self, connection: str, stream: str) -> dict[str, Any] | None:
        """The current state of one stream, or ``None`` if it has none."""
        query = sa.select(t.states.c.state).where(
            t.states.c.connection == connection, t.states.c.stream == stream
        )
        return self._db.read(lambda conn: conn.execute(query).scalar_one_or_none())

    def get_states(self, connection: str) -> dict[str, dict[str, Any]]:
        """The current state of every stream of a connection that has one."""
        query = sa.select(t.states.c.stream, t.states.c.state).where(
            t.states.c.connection == connection, t.states.c.state.is_not(None)
        )
        rows = self._db.read(lambda conn: conn.execute(query).all())
        return {stream: state for stream, state in sorted(rows)}

    def save_state(
        self,
        connection: str,
        stream: str,
        state: dict[str, Any] | None,
        *,
        run_id: str | None,
        checkpoint_index: int | None,
    ) -> None:
        """Make ``state`` the stream's current state and add it to its history.

        ``checkpoint_index`` is the checkpoint whose release moved the state
        (``None`` for an imported or edited state).  Raises
        :class:`MetadataStoreError` if it is lower than the index of the
        current state: state moves in index order only.
        """
        self._db.write(
            lambda conn: _save_state(
                conn, connection, stream, state, run_id=run_id, checkpoint_index=checkpoint_index
            )
        )

    def reset_state(self, connection: str, streams: Sequence[str] | None = None) -> list[str]:
        """Forget the state of ``streams`` (all streams if ``None``); return those reset.

        The next sync of a reset stream starts from scratch.  Checkpoint
        counters are kept: indices never repeat, or Delta would skip new data
        as already written.
        """
        now = t.utcnow()

        def reset(conn: Connection) -> list[str]:
            where = t.states.c.connection == connection
            if streams is not None:
                where = sa.and_(where, t.states.c.stream.in_(list(streams)))
            names = sorted(conn.execute(sa.select(t.states.c.stream).where(where)).scalars())
            if not names:
                return []
            conn.execute(sa.delete(t.states).where(where))
            conn.execute(
                sa.insert(t.state_history),
                [
                    {"connection": connection, "stream": name, "state": None, "saved_at": now}
                    for name in names
                ],
            )
            return names

        return self._db.write(reset)

    def state_history(
        self, connection: str, stream: str | None = None, *, limit: int = 50
    ) -> list[StateHistoryRecord]:
        """Saved states of a connection (or one stream), newest first; resets have no state."""
        h = t.state_history
        query = sa.select(h).where(h.c.connection == connection)
        if stream is not None:
            query = query.where(h.c.stream == stream)
        query = query.order_by(h.c.id.desc()).limit(limit)
        rows = self._db.read(lambda conn: conn.execute(query).all())
        return [record_from_row(StateHistoryRecord, r) for r in rows]

    # -- checkpoint counters -------------------------------------------------

    def allocate_checkpoint_indices(self, connection: str, stream: str, count: int) -> int:
        """Reserve ``count`` fresh checkpoint indices; return the first of the block.

        The block is ``[first, first + count)``.  Blocks never overlap and
        each starts where the previous one ended (the first ever starts at
        ``FIRST_CHECKPOINT_INDEX``); indices of a run that failed are not reused.
        """
        if count < 1:
            raise ValueError(f"count must be at least 1, got {count}")
        c = t.checkpoint_counters
        key = sa.and_(c.c.connection == connection, c.c.stream == stream)

        def allocate(conn: Connection) -> int:
            # The UPDATE locks the row (PostgreSQL) or the file (SQLite) until commit.
            bumped = conn.execute(
                sa.update(c).where(key).values(next_index=c.c.next_index + count)
            ).rowcount
            if bumped == 0:
                conn.execute(
                    sa.insert(c).values(
                        connection=connection,
                        stream=stream,
                        next_index=FIRST_CHECKPOINT_INDEX + count,
                    )
                )
                return FIRST_CHECKPOINT_INDEX
            next_index: int = conn.execute(sa.select(c.c.next_index).where(key)).scalar_one()
            return next_index - count

        return self._db.write(allocate)

    def checkpoint_counter(self, connection: str, stream: str) -> int | None:
        """The next index the stream's counter hands out (None: it has handed out none)."""
        c = t.checkpoint_counters
        query = sa.select(c.c.next_index).where(c.c.connection == connection,
                                                c.c.stream == stream)
        return self._db.read(lambda conn: conn.execute(query).scalar_one_or_none())

    def realign_checkpoint_indices(self, connection: str, stream: str,
                                   taken: int) -> tuple[int | None, int]:
        """Move the stream's counter past ``taken``, an index a table already holds.

        The repair for a store restored from an older copy (``headwater state
        realign``): the next block it hands out starts after ``taken``.  Never
        moves the counter back.  Returns the next index before (None: the
        stream had no counter) and after.
        """
        c = t.checkpoint_counters
        key = sa.and_(c.c.connection == connection, c.c.stream == stream)

        def realign(conn: Connection) -> tuple[int | None, int]:
            before: int | None = conn.execute(sa.select(c.c.next_index).where(key)
                                              ).scalar_one_or_none()
            after = max(before or FIRST_CHECKPOINT_INDEX, taken + 1)
            if before is None:
                conn.execute(sa.insert(c).values(connection=connection, stream=stream,
                                                 next_index=after))
            elif after != before:
                conn.execute(sa.update(c).where(key).values(next_index=after))
            return before, after

        return self._db.write(realign)

    # -- runs ----------------------------------------------------------------

    def create_run(
        self,
        connection: str,
        *,
        plan: dict[str, Any],
        state_before: dict[str, Any],
        config_redacted: dict[str, Any],
        kind: str = "sync",
    ) -> str:
        """Record a new ``running`` run with its plan; return its run id.

        Call it before reading any data: the stored plan is what a resumed
        attempt re-executes.  ``config_redacted`` must already have its secrets
        masked; the store keeps what it is given.
        """

        def create(conn: Connection) -> str:
            now = t.utcnow()
            run_id = new_run_id(now)
            conn.execute(
                sa.insert(t.runs).values(
                    run_id=run_id,
                    connection=connection,
                    kind=kind,
                    status="running",
                    started_at=now,
                    plan=plan,
                    state_before=state_before,
                    config_redacted=config_redacted,
                )
            )
            return run_id

        return self._db.write(create)

    def get_run(self, run_id: str) -> RunRecord | None:
        """One run with its attempts, or ``None`` if the store has no such run."""
        runs = self._read_runs(sa.select(t.runs).where(t.runs.c.run_id == run_id))
        return runs[0] if runs else None

    def list_runs(self, connection: str | None = None, limit: int = 20) -> list[RunRecord]:
        """The newest ``limit`` runs (of one connection, or all), newest first."""
        query = sa.select(t.runs)
        if connection is not None:
            query = query.where(t.runs.c.connection == connection)
        query = query.order_by(t.runs.c.started_at.desc(), t.runs.c.run_id.desc()).limit(limit)
        return self._read_runs(query)

    def replays_of(self, connection: str, run_id: str) -> list[RunRecord]:
        """The runs of ``connection`` that replayed run ``run_id``, oldest first.

        A replay's rows keep the id of the run it replays (so that replaying is
        idempotent), under checkpoints of its own: who committed such a row is found
        among these runs' checkpoints, not the replayed run's.  Replays are few, so
        their plans are read and matched here rather than by a JSON query per dialect.
        """
        r = t.runs
        query = (sa.select(r).where(r.c.connection == connection, r.c.kind == "replay")
                 .order_by(r.c.started_at, r.c.run_id))
        return [run for run in self._read_runs(query)
                if (run.plan or {}).get("replay_of") == run_id]

    def list_run_summaries(self, connection: str, *, limit: int = 50,
                           before: str | None = None) -> list[RunSummary]:
        """The newest ``limit`` runs of ``connection``, newest first, without their plans.

        ``before``: only runs that started before that run (paging back).  One
        indexed range scan (``ix_runs_connection_started``) whatever the
        history's length.
        """
        r = t.runs
        query = sa.select(r.c.run_id, r.c.connection, r.c.kind, r.c.status, r.c.started_at,
                          r.c.ended_at, r.c.stats, r.c.error).where(r.c.connection == connection)
        if before is not None:
            anchor = sa.select(r.c.started_at).where(r.c.run_id == before).scalar_subquery()
            query = query.where(sa.or_(r.c.started_at < anchor,
                                       sa.and_(r.c.started_at == anchor, r.c.run_id < before)))
        query = query.order_by(r.c.started_at.desc(), r.c.run_id.desc()).limit(limit)
        rows = self._db.read(lambda conn: conn.execute(query).all())
        return [record_from_row(RunSummary, row, stats=row.stats or {}) for row in rows]

    def recent_run_summaries(self, connections: Sequence[str],
                             limit: int) -> dict[str, list[RunSummary]]:
        """The newest ``limit`` runs of each connection, newest first, in one statement
        (a ``LIMIT``ed index range per connection, joined by ``UNION ALL``): the
        connections list of the web page, whatever the history's length."""
        if not connections:
            return {}
        r = t.runs
        columns = (r.c.run_id, r.c.connection, r.c.kind, r.c.status, r.c.started_at,
                   r.c.ended_at, r.c.stats, r.c.error)
        parts = [sa.select(*columns).where(r.c.connection == name)
                 .order_by(r.c.started_at.desc(), r.c.run_id.desc()).limit(limit)
                 .subquery() for name in connections]
        query = sa.union_all(*[sa.select(part) for part in parts])
        rows = self._db.read(lambda conn: conn.execute(query).all())
        found: dict[str, list[RunSummary]] = {name: [] for name in connections}
        for row in rows:
            found[row.connection].append(record_from_row(RunSummary, row,
                                                         stats=row.stats or {}))
        for runs in found.values():
            runs.sort(key=lambda run: (run.started_at, run.run_id), reverse=True)
        return found

    def find_unfinished_run(self, connection: str) -> RunRecord | None:
        """The newest run of ``connection`` still ``running`` or ``stopped``: one to resume.

        A run stays ``running`` when its process was killed; only the holder
        of the connection's lock should conclude that it is abandoned.  A
        ``stopped`` run ended on request with checkpoints left (:meth:`stop_run`).
        """
        query = (
            sa.select(t.runs)
            .where(t.runs.c.connection == connection,
                   t.runs.c.status.in_(sorted(UNFINISHED_STATUSES)))
            .order_by(t.runs.c.started_at.desc(), t.runs.c.run_id.desc())
            .limit(1)
        )
        runs = self._read_runs(query)
        return runs[0] if runs else None

    def finish_run(
        self,
        run_id: str,
        *,
        status: RunStatus,
        stats: dict[str, Any],
        state_after: dict[str, Any],
        error: str | None,
    ) -> None:
        """Close a ``running`` run; a run is finished once, then never changes (nor do
        its checkpoints: :meth:`record_checkpoint` refuses), and it gets the next
        ``finished_seq`` (see :func:`~headwater.metadata_store._schema.next_finished_seq`)."""
        _check_status(status, FINISHED_STATUSES, "run")

        def finish(conn: Connection) -> None:
            _require_running_run(conn, run_id)
            conn.execute(
                sa.update(t.runs)
                .where(t.runs.c.run_id == run_id)
                .values(
                    status=status,
                    ended_at=t.utcnow(),
                    stats=mask_obj(stats),
                    state_after=state_after,
                    error=_masked(error),
                    finished_seq=t.next_finished_seq(conn),
                )
            )

        self._db.write(finish)

    def stop_run(
        self,
        run_id: str,
        *,
        stats: dict[str, Any],
        state_after: dict[str, Any],
        error: str,
    ) -> None:
        """Mark a ``running`` run ``stopped``: it ended on request, checkpoints are left.

        Unlike :meth:`finish_run` this does not close the run: it stays
        unfinished (:meth:`find_unfinished_run` finds it) and the next
        :meth:`start_attempt` makes it ``running`` again.  ``error`` says why it
        stopped and what is left; ``stats`` and ``state_after`` describe it as
        it stopped.
        """

        def stop(conn: Connection) -> None:
            _require_running_run(conn, run_id)
            conn.execute(
                sa.update(t.runs)
                .where(t.runs.c.run_id == run_id)
                .values(status="stopped", ended_at=t.utcnow(), stats=mask_obj(stats),
                        state_after=state_after, error=_masked(error))
            )

        self._db.write(stop)

    def _read_runs(self, query: sa.Select[Any]) -> list[RunRecord]:
        def read(conn: Connection) -> list[RunRecord]:
            rows = conn.execute(query).all()
            if not rows:
                return []
            a = t.attempts
            attempts: dict[str, list[AttemptRecord]] = {r.run_id: [] for r in rows}
            for r in conn.execute(
                sa.select(a).where(a.c.run_id.in_(list(attempts))).order_by(a.c.number)
            ):
                attempts[r.run_id].append(record_from_row(AttemptRecord, r))
            return [record_from_row(RunRecord, r, stats=r.stats or {},
                                    attempts=attempts[r.run_id]) for r in rows]

        return self._db.read(read)

    # -- attempts ------------------------------------------------------------

    def start_attempt(self, run_id: str, *, pid: int, host: str) -> int:
        """Record a new attempt at an unfinished run; return its number (1, 2, ...).

        Earlier attempts still marked ``running`` are marked ``failed``: a new
        attempt is started by the holder of the connection's lock, so no
        earlier attempt can still be alive (its process was killed).  A
        ``stopped`` run becomes ``running`` again (its end time, state after
        and reason are cleared: they described the stop).
        """
        a = t.attempts

        def start(conn: Connection) -> int:
            status = _require_run(conn, run_id)[1]
            if status not in UNFINISHED_STATUSES:
                raise MetadataStoreError(
                    f"run {run_id} already finished with status {status}", run_id=run_id
                )
            now = t.utcnow()
            if status == "stopped":
                conn.execute(
                    sa.update(t.runs)
                    .where(t.runs.c.run_id == run_id)
                    .values(status="running", ended_at=None, state_after=None, error=None)
                )
            conn.execute(
                sa.update(a)
                .where(a.c.run_id == run_id, a.c.status == "running")
                .values(
                    status="failed",
                    ended_at=now,
                    error="the attempt ended without finishing (its process was killed or lost)",
                )
            )
            last = conn.execute(
                sa.select(sa.func.max(a.c.number)).where(a.c.run_id == run_id)
            ).scalar_one()
            number = (last or 0) + 1
            conn.execute(
                sa.insert(a).values(
                    run_id=run_id,
                    number=number,
                    status="running",
                    pid=pid,
                    host=host,
                    started_at=now,
                )
            )
            return number

        return self._db.write(start)

    def finish_attempt(
        self, run_id: str, number: int, *, status: AttemptStatus, error: str | None = None
    ) -> None:
        """Close one attempt with ``succeeded``, ``failed`` or ``stopped``."""
        _check_status(status, ATTEMPT_END_STATUSES, "attempt")
        a = t.attempts

        def finish(conn: Connection) -> None:
            updated = conn.execute(
                sa.update(a)
                .where(a.c.run_id == run_id, a.c.number == number)
                .values(status=status, ended_at=t.utcnow(), error=_masked(error))
            ).rowcount
            if updated == 0:
                raise MetadataStoreError(f"run {run_id} has no attempt {number}", run_id=run_id)

        self._db.write(finish)

    # -- checkpoints ---------------------------------------------------------

    def record_checkpoint(
        self,
        run_id: str,
        stream: str,
        index: int,
        checkpoint_id: str,
        *,
        status: CheckpointStatus,
        stats: dict[str, Any],
    ) -> None:
        """Record (or update) what happened to checkpoint ``index`` of a run's stream.

        Refused once the run is finished: what a finished run committed is final
        (the ``/metrics`` totals keep it, summed once).
        """
        _check_status(status, CHECKPOINT_STATUSES, "checkpoint")

        def record(conn: Connection) -> None:
            _require_unfinished_run(conn, run_id)
            _record_checkpoint(
                conn, run_id, stream, index, checkpoint_id, status=status, stats=stats
            )

        self._db.write(record)

    def release_checkpoint(
        self,
        run_id: str,
        stream: str,
        index: int,
        checkpoint_id: str,
        *,
        state: dict[str, Any] | None,
        stats: dict[str, Any],
    ) -> None:
        """Move the stream's state and mark the checkpoint ``released``, atomically.

        The same as :meth:`save_state` followed by :meth:`record_checkpoint`
        with ``status="released"``, in one transaction: a crash can never
        leave the state moved but the checkpoint not released, or the reverse.
        """

        def release(conn: Connection) -> None:
            connection = _require_unfinished_run(conn, run_id)
            _save_state(conn, connection, stream, state, run_id=run_id, checkpoint_index=index)
            _record_checkpoint(
                conn, run_id, stream, index, checkpoint_id, status="released", stats=stats
            )

        self._db.write(release)

    def list_checkpoints(self, run_id: str) -> list[CheckpointRecord]:
        """Every recorded checkpoint of a run, by stream then index."""
        c = t.checkpoints
        query = sa.select(c).where(c.c.run_id == run_id).order_by(c.c.stream, c.c.checkpoint_index)
        rows = self._db.read(lambda conn: conn.execute(query).all())
        return [record_from_row(CheckpointRecord, r, columns={"index": "checkpoint_index"})
                for r in rows]

    def released_indices(self, run_id: str, stream: str) -> set[int]:
        """Indices of the run's checkpoints of ``stream`` whose state was released."""
        c = t.checkpoints
        query = sa.select(c.c.checkpoint_index).where(
            c.c.run_id == run_id, c.c.stream == stream, c.c.status == "released"
        )
        return self._db.read(lambda conn: set(conn.execute(query).scalars()))

    # -- figures over the whole store (metrics) ------------------------------

    def figures(self, duration_buckets: Sequence[float]) -> StoreFigures:
        """Run counts, run durations bucketed by ``duration_buckets`` (seconds), last
        runs, per-stream totals and current states, all from one transaction.

        Incremental (see :mod:`headwater.metadata_store._figures`): the finished
        runs' share is read once per instance, then each call reads the runs
        finished since and the unfinished ones, so it stays cheap however long
        the history.  Calls on one instance take turns.
        """
        with self._figures.lock:  # before the snapshot begins: see read_figures
            return self._db.read(
                lambda conn: read_figures(conn, duration_buckets, self._figures), snapshot=True)

    # -- a connector's own state, staged before its checkpoint commits -------

    def stage_partition_states(
        self, run_id: str, stream: str, index: int, states: dict[str, dict[str, Any]]
    ) -> None:
        """Keep ``states`` (partition id -> the connector's state) of checkpoint ``index``.

        Written while the checkpoint's write job runs, before its commit; a
        partition staged twice keeps the later state.
        """
        p = t.partition_states

        def stage(conn: Connection) -> None:
            _require_run(conn, run_id)
            now = t.utcnow()
            for partition_id, state in states.items():
                key = sa.and_(p.c.run_id == run_id, p.c.stream == stream,
                              p.c.checkpoint_index == index, p.c.partition_id == partition_id)
                updated = conn.execute(
                    sa.update(p).where(key).values(state=state, updated_at=now)).rowcount
                if updated == 0:
                    conn.execute(sa.insert(p).values(
                        run_id=run_id, stream=stream, checkpoint_index=index,
                        partition_id=partition_id, state=state, updated_at=now))

        self._db.write(stage)

    def staged_partition_states(
        self, run_id: str, stream: str, index: int
    ) -> dict[str, dict[str, Any]]:
        """Partition id -> state staged for checkpoint ``index`` (empty if none)."""
        p = t.partition_states
        query = sa.select(p.c.partition_id, p.c.state).where(
            p.c.run_id == run_id, p.c.stream == stream, p.c.checkpoint_index == index)
        rows = self._db.read(lambda conn: conn.execute(query).all())
        return {row.partition_id: row.state for row in rows}

    def clear_partition_states(self, run_id: str, stream: str, index: int) -> None:
        """Forget what an earlier attempt staged for checkpoint ``index``."""
        p = t.partition_states
        self._db.write(lambda conn: conn.execute(sa.delete(p).where(
            p.c.run_id == run_id, p.c.stream == stream, p.c.checkpoint_index == index)))

    # -- live figures of a running run ----------------------------------------

    def set_live_figures(self, run_id: str, figures: Sequence[LiveFigure]) -> None:
        """Replace the run's live figures with ``figures`` (none: drop them all), in one
        transaction, so a reader never sees a checkpoint both committed and still read."""
        p = t.run_progress

        def replace_all(conn: Connection) -> None:
            conn.execute(sa.delete(p).where(p.c.run_id == run_id))
            if figures:
                conn.execute(sa.insert(p), [
                    {"run_id": run_id, "stream": f.stream, "checkpoint_index": f.checkpoint_index,
                     "partition_id": f.partition_id[:512], "records": f.records,
                     "updated_at": f.updated_at} for f in figures])

        self._db.write(replace_all)

    def live_figures(self, run_id: str) -> list[LiveFigure]:
        """The run's live figures: records read so far by the partitions of its checkpoints
        being read now (none once they commit, nor in a store without the table)."""
        p = t.run_progress
        query = (sa.select(p.c.stream, p.c.checkpoint_index, p.c.partition_id, p.c.records,
                           p.c.updated_at).where(p.c.run_id == run_id)
                 .order_by(p.c.stream, p.c.checkpoint_index, p.c.partition_id))

        def read(conn: Connection) -> list[LiveFigure]:
            if not t.has_run_progress(conn):
                return []
            return [record_from_row(LiveFigure, row) for row in conn.execute(query)]

        return self._db.read(read)

    # -- log lines of a run --------------------------------------------------

    def append_run_logs(self, run_id: str, lines: Sequence[RunLogLine], *,
                        keep_first: int, keep_last: int) -> None:
        """Store ``lines`` of a run, keeping only its first ``keep_first`` and last
        ``keep_last`` lines: those between are deleted, so a chatty run holds at most
        ``keep_first + keep_last`` rows.  Sequence numbers keep counting, so a
        reader sees where lines were left out (:meth:`run_logs`)."""
        if not lines:
            return
        g = t.run_logs

        def append(conn: Connection) -> None:
            conn.execute(sa.insert(g), [{"run_id": run_id, "seq": line.seq, "at": line.at,
                                         "level": line.level, "logger": line.logger[:255],
                                         "message": line.message} for line in lines])
            newest = max(line.seq for line in lines)
            if newest > keep_first + keep_last:
                conn.execute(sa.delete(g).where(g.c.run_id == run_id, g.c.seq > keep_first,
                                                g.c.seq <= newest - keep_last))

        self._db.write(append)

    def last_run_log_seq(self, run_id: str) -> int:
        """The highest sequence number of the run's stored log lines (0: none): where the
        lines of a resumed attempt go on."""
        g = t.run_logs
        query = sa.select(sa.func.max(g.c.seq)).where(g.c.run_id == run_id)
        return int(self._db.read(lambda conn: conn.execute(query).scalar()) or 0)

    def run_logs(self, run_id: str, *, after: int = 0,
                 limit: int = 1000) -> tuple[list[RunLogLine], int]:
        """The run's stored log lines with ``seq > after`` (at most ``limit``, oldest
        first), and how many lines of the run were left out to bound the store."""
        g = t.run_logs
        query = (sa.select(g.c.seq, g.c.at, g.c.level, g.c.logger, g.c.message)
                 .where(g.c.run_id == run_id, g.c.seq > after).order_by(g.c.seq).limit(limit))
        totals = sa.select(sa.func.count(), sa.func.max(g.c.seq)).where(g.c.run_id == run_id)

        def read(conn: Connection) -> tuple[list[RunLogLine], int]:
            rows = conn.execute(query).all()
            stored, newest = conn.execute(totals).one()
            return ([record_from_row(RunLogLine, row) for row in rows],
                    (newest or 0) - (stored or 0))

        return self._db.read(read)

    # -- lock ----------------------------------------------------------------

    @contextmanager
    def lock(
        self, connection: str, *, run_id: str | None = None, stale_after_s: float = 600
    ) -> Iterator[LockHandle]:
        """Hold the lock of ``connection`` for the ``with`` block.

        At most one process (on any host sharing the store) holds it.  Raises
        :class:`~headwater.errors.ConnectionLockedError` naming the holder's
        pid, host, start time and run if it is held and not stale; takes a
        stale lock over with a WARNING.  See :mod:`headwater.metadata_store._lock`.
        """
        with hold_lock(self._db, connection, run_id=run_id, stale_after_s=stale_after_s) as h:
            yield h

    def lock_holder(self, connection: str) -> LockHolder | None:
        """Who holds ``connection``'s lock now (the row may be stale), or ``None``."""
        return self._db.read(lambda conn: read_holder(conn, connection))


def _masked(error: str | None) -> str | None:
    return None if error is None else mask(error)


def _check_status(status: str, allowed: frozenset[str], what: str) -> None:
    if status not in allowed:
        raise ValueError(f"{what} status must be one of {sorted(allowed)}, got {status!r}")


def _require_run(conn: Connection, run_id: str) -> tuple[str, str]:
    """``(connection, status)`` of a run; raises if the store has no such run."""
    row = conn.execute(
        sa.select(t.runs.c.connection, t.runs.c.status).where(t.runs.c.run_id == run_id)
    ).first()
    if row is None:
        raise MetadataStoreError(f"the metadata store has no run {run_id}", run_id=run_id)
    return row.connection, row.status


def _require_unfinished_run(conn: Connection, run_id: str) -> str:
    """The run's connection; raises if it has no such run or the run is finished."""
    connection, status = _require_run(conn, run_id)
    if status in FINISHED_STATUSES:
        raise MetadataStoreError(
            f"run {run_id} already finished with status {status}: its checkpoints are final",
            run_id=run_id)
    return connection


def _require_running_run(conn: Connection, run_id: str) -> None:
    status = _require_run(conn, run_id)[1]
    if status == "stopped":
        raise MetadataStoreError(
            f"run {run_id} is stopped; start an attempt to resume it first", run_id=run_id
        )
    if status != "running":
        raise MetadataStoreError(
            f"run {run_id} already finished with status {status}", run_id=run_id
        )


def _save_state(
    conn: Connection,
    connection: str,
    stream: str,
    state: dict[str, Any] | None,
    *,
    run_id: str | None,
    checkpoint_index: int | None,
) -> None:
    s = t.states
    key = sa.and_(s.c.connection == connection, s.c.stream == stream)
    now = t.utcnow()
    current = conn.execute(sa.select(s.c.checkpoint_index).where(key)).first()
    if (
        current is not None
        and current.checkpoint_index is not None
        and checkpoint_index is not None
        and checkpoint_index < current.checkpoint_index
    ):
        raise MetadataStoreError(
            f"state of stream '{stream}' would move back from checkpoint "
            f"{current.checkpoint_index} to {checkpoint_index}; state moves in index order only",
            connection=connection,
            stream=stream,
        )
    values = {"state": state, "run_id": run_id, "checkpoint_index": checkpoint_index}
    if current is None:
        conn.execute(
            sa.insert(s).values(connection=connection, stream=stream, updated_at=now, **values)
        )
    else:
        conn.execute(sa.update(s).where(key).values(updated_at=now, **values))
    conn.execute(
        sa.insert(t.state_history).values(
            connection=connection, stream=stream, saved_at=now, **values
        )
    )


def _record_checkpoint(
    conn: Connection,
    run_id: str,
    stream: str,
    index: int,
    checkpoint_id: str,
    *,
    status: str,
    stats: dict[str, Any],
) -> None:
    c = t.checkpoints
    values = {"checkpoint_id": checkpoint_id, "status": status, "stats": stats}
    now = t.utcnow()
    updated = conn.execute(
        sa.update(c)
        .where(c.c.run_id == run_id, c.c.stream == stream, c.c.checkpoint_index == index)
        .values(updated_at=now, **values)
    ).rowcount
    if updated == 0:
        conn.execute(
            sa.insert(c).values(
                run_id=run_id, stream=stream, checkpoint_index=index, updated_at=now, **values
            )
        )
    # Its summed figures, apart (what ``/metrics`` reads: see ``checkpoint_figures``).
    f = t.checkpoint_figures
    figures = t.checkpoint_figures_values(status, stats)
    if conn.execute(sa.update(f).where(f.c.run_id == run_id, f.c.stream == stream,
                                       f.c.checkpoint_index == index)
                    .values(**figures)).rowcount == 0:
        conn.execute(sa.insert(f).values(run_id=run_id, stream=stream, checkpoint_index=index,
                                         **figures))
