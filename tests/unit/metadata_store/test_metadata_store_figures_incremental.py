"""The store's figures are incremental (``FiguresCache``) and still exact.

A long-lived store (``serve``'s) reads the finished runs once, then only what
changed; these tests write a history between its calls (runs stopped, resumed,
failed, new ones, some by a second store instance as a ``headwater sync`` in
another process writes them) and compare each call with the figures computed
from scratch: by a new store instance, and by a plain Python fold over every
run and checkpoint the store lists.
"""

from __future__ import annotations

import random
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from headwater.metadata_store import (
    DURABLE_CHECKPOINT_STATUSES,
    SCHEMA_VERSION,
    DurationHistogram,
    LastRun,
    MetadataStore,
    RunCount,
    StoreFigures,
    StreamTotals,
)
from tests.unit.metadata_store.test_metadata_store_figures import Clock, store_clock

BUCKETS = (5, 30, 60, 600)
CONNECTIONS = ("orders", "users", "events")
STREAMS = ("a", "b")


@pytest.fixture(name="clock")
def _clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    return store_clock(monkeypatch)


def from_scratch(store: MetadataStore) -> StoreFigures:
    """The figures by definition, folded in Python over every run and checkpoint listed."""
    runs = store.list_runs(limit=1_000_000)
    counts = Counter((r.connection, r.kind, r.status) for r in runs)
    durations: dict[str, list[float]] = {}
    newest: dict[str, Any] = {}
    success: dict[str, datetime] = {}
    sums: dict[tuple[str, str], list[int]] = {}
    for r in runs:
        if r.ended_at is not None:
            best = newest.get(r.connection)
            if best is None or (r.started_at, r.run_id) > (best.started_at, best.run_id):
                newest[r.connection] = r
        if r.status in ("succeeded", "failed"):
            assert r.ended_at is not None
            durations.setdefault(r.connection, []).append(
                (r.ended_at - r.started_at).total_seconds())
            if r.status == "succeeded" and r.kind == "sync":
                success[r.connection] = max(r.ended_at, success.get(r.connection, r.ended_at))
        for c in store.list_checkpoints(r.run_id):
            if c.status in DURABLE_CHECKPOINT_STATUSES:
                total = sums.setdefault((r.connection, c.stream), [0, 0, 0, 0])
                total[0] += 1
                for i, key in enumerate(("records_written", "records_rejected", "bytes"), 1):
                    total[i] += int(c.stats.get(key) or 0)
    names = sorted({r.connection for r in runs})
    return StoreFigures(
        run_counts=[RunCount(*key, n) for key, n in sorted(counts.items())],
        durations=[DurationHistogram(name, tuple((float(b), sum(d <= b for d in ds))
                                                 for b in sorted(BUCKETS)), len(ds), sum(ds))
                   for name, ds in sorted(durations.items())],
        last_runs=[LastRun(name, *((newest[name].kind, newest[name].status,
                                    newest[name].started_at, newest[name].ended_at)
                                   if name in newest else (None,) * 4),
                           last_success_at=success.get(name)) for name in names],
        stream_totals=[StreamTotals(*key, *values) for key, values in sorted(sums.items())],
        states=store.figures(BUCKETS).states,
    )


def exact(figures: StoreFigures) -> StoreFigures:
    """``figures`` with each duration sum rounded to the microsecond (the order of a
    float sum differs between folds)."""
    return StoreFigures(figures.run_counts,
                        [DurationHistogram(h.connection, h.buckets, h.count, round(h.sum_s, 6))
                         for h in figures.durations],
                        figures.last_runs, figures.stream_totals, figures.states)


class History:
    """Random syncs of a few connections, each step on one of two store instances."""

    def __init__(self, stores: list[MetadataStore], clock: Clock, seed: int) -> None:
        self.stores, self.clock, self.rng = stores, clock, random.Random(seed)
        self.open: dict[str, str] = {}  # connection -> its unfinished run
        self.index = 0  # checkpoint indices only grow, as the store's counters hand them out

    def reread(self) -> None:
        """Take the unfinished runs from the store (it was restored from a copy)."""
        found = {c: self.stores[0].find_unfinished_run(c) for c in CONNECTIONS}
        self.open = {c: run.run_id for c, run in found.items() if run is not None}

    def step(self) -> None:
        rng, store = self.rng, self.rng.choice(self.stores)
        self.clock.now += timedelta(seconds=rng.randint(1, 900))
        connection = rng.choice(CONNECTIONS)
        if connection not in self.open:
            run_id = store.create_run(connection, plan={}, state_before={},
                                      config_redacted={}, kind=rng.choice(["sync", "sync",
                                                                           "replay"]))
            store.start_attempt(run_id, pid=1, host="h")
            self.open[connection] = run_id
            return
        run_id = self.open[connection]
        status = store.get_run(run_id).status  # type: ignore[union-attr]
        if status == "stopped":  # the next sync resumes it
            store.start_attempt(run_id, pid=2, host="h")
            return
        move = rng.random()
        if move < 0.5:
            stats = {"records_written": rng.randint(0, 500), "bytes": rng.randint(0, 9999),
                     "records_rejected": rng.randint(0, 3), "partitions": ["p"]}
            checkpoint = rng.choice(["committed", "committed", "released", "failed"])
            stream, self.index = rng.choice(STREAMS), self.index + 1
            index = self.index
            if checkpoint == "released":
                store.release_checkpoint(run_id, stream, index, f"cp{index}",
                                         state={"cursor": index}, stats=stats)
            else:
                store.record_checkpoint(run_id, stream, index, f"cp{index}",
                                        status=checkpoint,  # type: ignore[arg-type]
                                        stats=stats)
        elif move < 0.65:
            store.stop_run(run_id, stats={}, state_after={}, error="stop requested")
        else:
            store.finish_run(run_id, status=rng.choice(["succeeded", "succeeded", "failed"]),
                             stats={}, state_after={}, error=None)
            del self.open[connection]


@pytest.mark.parametrize("seed", [1, 2])
def test_each_call_equals_the_figures_from_scratch_as_the_history_grows(
        store: MetadataStore, store_url: str, clock: Clock, seed: int) -> None:
    other = MetadataStore(store_url)  # a `headwater sync` in another process
    try:
        history = History([store, other], clock, seed)
        for _ in range(12):
            for _ in range(history.rng.randint(0, 8)):
                history.step()
            kept = store.figures(BUCKETS)  # the cache, brought up to date
            fresh = MetadataStore(store_url)  # a new process: every run read
            try:
                assert exact(kept) == exact(fresh.figures(BUCKETS))
            finally:
                fresh.close()
            assert exact(kept) == exact(from_scratch(store))
    finally:
        other.close()
    statuses = {r.status for r in store.list_runs(limit=1000)}
    assert {"succeeded", "failed"} <= statuses  # the history had finished runs to keep


def test_a_stopped_run_resumed_by_another_process_counts_once_it_finishes(
        store: MetadataStore, store_url: str, clock: Clock) -> None:
    run_id = store.create_run("orders", plan={}, state_before={}, config_redacted={})
    store.start_attempt(run_id, pid=1, host="h")
    store.record_checkpoint(run_id, "a", 1, "cp1", status="committed",
                            stats={"records_written": 10})
    clock.now += timedelta(seconds=10)
    store.stop_run(run_id, stats={}, state_after={}, error="stop requested")
    assert [(h.count, h.sum_s) for h in store.figures(BUCKETS).durations] == []
    other = MetadataStore(store_url)
    try:
        other.start_attempt(run_id, pid=2, host="h")
        other.record_checkpoint(run_id, "a", 2, "cp2", status="committed",
                                stats={"records_written": 5})
        clock.now += timedelta(seconds=20)
        other.finish_run(run_id, status="succeeded", stats={}, state_after={}, error=None)
    finally:
        other.close()
    figures = store.figures(BUCKETS)
    assert [(h.count, h.sum_s) for h in figures.durations] == [(1, 30.0)]
    assert [(t.checkpoints, t.records_written) for t in figures.stream_totals] == [(2, 15)]
    assert figures.run_counts == [RunCount("orders", "sync", "succeeded", 1)]
    assert exact(store.figures(BUCKETS)) == exact(from_scratch(store))


def test_a_warm_call_searches_indexes_and_reads_no_finished_run(
        store: MetadataStore, store_url: str, clock: Clock) -> None:
    """What a call costs once warm does not grow with the history: every statement
    it runs on ``runs`` and ``checkpoints`` is an index search (SQLite's plans)."""
    history = History([store], clock, seed=3)
    for _ in range(60):
        history.step()
    store.figures(BUCKETS)
    statements: list[tuple[str, Any]] = []
    engine = store._db.engine

    def seen(conn: Any, cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        statements.append((statement, parameters))

    sa.event.listen(engine, "before_cursor_execute", seen)
    try:
        store.figures(BUCKETS)
    finally:
        sa.event.remove(engine, "before_cursor_execute", seen)
    selects = [(s, p) for s, p in statements if s.lstrip().upper().startswith("SELECT")]
    assert len(selects) >= 3
    with engine.connect() as conn:
        for statement, parameters in selects:
            plan = " | ".join(row[-1] for row in conn.exec_driver_sql(
                f"EXPLAIN QUERY PLAN {statement}", parameters))
            for table in ("runs", "checkpoints"):
                assert f"SCAN {table} " not in f"{plan} " and f"SCAN {table}|" not in plan, (
                    statement, plan)


def _as_schema_2(store: MetadataStore) -> None:
    """Make ``store``'s database what Headwater with schema 2 left."""
    with store._db.engine.begin() as db:
        db.exec_driver_sql("DROP INDEX ix_runs_finished_seq")
        db.exec_driver_sql("ALTER TABLE runs DROP COLUMN finished_seq")
        db.exec_driver_sql("DELETE FROM meta WHERE key = 'finished_seq'")
        db.exec_driver_sql("UPDATE meta SET value = '2' WHERE key = 'schema_version'")


def test_a_schema_2_store_is_numbered_when_opened_and_counts_the_same(
        store: MetadataStore, store_url: str, clock: Clock) -> None:
    history = History([store], clock, seed=4)
    for _ in range(40):
        history.step()
    before = exact(from_scratch(store))
    _as_schema_2(store)
    store.close()

    store = MetadataStore(store_url)
    try:
        assert exact(store.figures(BUCKETS)) == before
        history.stores = [store]
        for _ in range(20):  # runs finish after the migration: numbered from 1
            history.step()
        assert exact(store.figures(BUCKETS)) == exact(from_scratch(store))
        with store._db.engine.connect() as db:
            version = db.exec_driver_sql(
                "SELECT value FROM meta WHERE key = 'schema_version'").scalar()
            unnumbered = db.exec_driver_sql(
                "SELECT count(*) FROM runs WHERE finished_seq IS NULL "
                "AND status IN ('succeeded', 'failed')").scalar()
        assert (version, unnumbered) == (str(SCHEMA_VERSION), 0)

        # A process still running the older Headwater finishes a run without a number:
        # read afresh on every call, it counts all the same.
        run_id = store.create_run("late", plan={}, state_before={}, config_redacted={})
        with store._db.engine.begin() as db:
            db.execute(sa.text("UPDATE runs SET status = 'succeeded', ended_at = started_at "
                               "WHERE run_id = :run_id"), {"run_id": run_id})
        assert exact(store.figures(BUCKETS)) == exact(from_scratch(store))
        assert ("late", "sync", "succeeded", 1) in [
            (c.connection, c.kind, c.status, c.count) for c in store.figures(BUCKETS).run_counts]
    finally:
        store.close()


def test_the_kept_share_is_dropped_when_the_store_is_another(
        store: MetadataStore, clock: Clock, tmp_path: Path) -> None:
    """A store restored from an older copy no longer holds the run the cache counted
    last with its number: everything is read again."""
    history = History([store], clock, seed=5)
    for _ in range(30):
        history.step()
    store.close()
    database = tmp_path / ".headwater" / "headwater.db"
    older = database.read_bytes()
    for _ in range(30):
        history.step()
    assert exact(store.figures(BUCKETS)) == exact(from_scratch(store))
    store.close()
    database.write_bytes(older)  # restored from the older copy
    history.reread()
    for _ in range(10):  # and it went on: as many runs finished as were lost, maybe more
        history.step()
    assert exact(store.figures(BUCKETS)) == exact(from_scratch(store))


def test_the_figures_are_summed_from_checkpoint_figures_not_the_stats(
        store: MetadataStore, store_url: str, clock: Clock) -> None:
    """A first scrape reads ``checkpoint_figures`` (a few numbers a checkpoint), not each
    checkpoint's ``stats`` (its partition list and per-partition figures: 5 s over 100,000
    checkpoints, issue 39); a store of schema 3 gets them when a writer opens it, and a
    reader of one that is not migrated yet still counts from the stats."""
    history = History([store], clock, seed=7)
    for _ in range(40):
        history.step()
    before = exact(from_scratch(store))
    assert exact(MetadataStore(store_url).figures(BUCKETS)) == before
    store.close()
    with sa.create_engine(store_url).begin() as db:  # as Headwater with schema 3 left it
        db.exec_driver_sql("DROP TABLE checkpoint_figures")
        db.exec_driver_sql("UPDATE meta SET value = '3' WHERE key = 'schema_version'")
    reader = MetadataStore(store_url, create=False)
    assert exact(reader.figures(BUCKETS)) == before  # not migrated: from the stats
    reader.close()
    MetadataStore(store_url).close()  # a writer migrates it
    with sa.create_engine(store_url).begin() as db:
        counts = [db.exec_driver_sql(f"SELECT count(*) FROM {table}").scalar()
                  for table in ("checkpoints", "checkpoint_figures")]
        # What the figures read now holds it all: the stats' figures are not read again.
        db.exec_driver_sql("UPDATE checkpoints SET stats = '{}'")
    assert counts[0] == counts[1] > 0
    fresh = MetadataStore(store_url, create=False)
    assert exact(fresh.figures(BUCKETS)) == before
    fresh.close()
