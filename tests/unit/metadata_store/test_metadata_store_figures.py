"""Totals over the whole store (``MetadataStore.figures``), computed by the database.

The store's clock is set by the test, so run durations are exact; every row is
written through the store's own API, as syncs write them.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from headwater.metadata_store import MetadataStore, StoreFigures
from headwater.metadata_store import _schema as schema

T0 = datetime(2026, 11, 20, 14, 0, 0, tzinfo=UTC)
DATE_RANGE = {"state_type": "date-range", "cursor_field": "updated_at",
              "slices": [{"start": "2026-11-01T00:00:00Z", "end": "2026-11-20T13:00:00Z"}]}


class Clock:
    """The store's ``utcnow``, moved by the test."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def store_clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """Make the store's clock a :class:`Clock` (at ``T0``) for the test."""
    clock = Clock()
    monkeypatch.setattr(schema, "utcnow", clock)
    return clock


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    return store_clock(monkeypatch)


def run(store: MetadataStore, clock: Clock, connection: str, *, seconds: float,
        status: str = "succeeded", kind: str = "sync",
        checkpoints: dict[str, list[dict[str, Any]]] | None = None) -> str:
    """A run that took ``seconds``, its checkpoints recorded on the way; ``status``
    ``running`` leaves it open."""
    run_id = store.create_run(connection, plan={}, state_before={},
                              config_redacted={"source": {"api_key": "**********"}}, kind=kind)
    store.start_attempt(run_id, pid=1, host="h")
    for stream, stats_list in (checkpoints or {}).items():
        for index, stats in enumerate(stats_list, start=1):
            status_of = stats.pop("status", "committed")
            store.record_checkpoint(run_id, stream, index, f"cp{index}", status=status_of,
                                    stats={**stats, "partitions": ["p1", "p2"]})
    clock.now += timedelta(seconds=seconds)
    if status == "stopped":
        store.stop_run(run_id, stats={}, state_after={}, error="stop requested")
    elif status != "running":
        store.finish_run(run_id, status=status,  # type: ignore[arg-type]
                         stats={}, state_after={}, error=None)
    clock.now += timedelta(seconds=60)
    return run_id


def test_figures_of_an_empty_store_are_empty(store: MetadataStore) -> None:
    assert store.figures([1, 10]) == StoreFigures([], [], [], [], [])


def test_run_counts_durations_and_last_runs(store: MetadataStore, clock: Clock) -> None:
    run(store, clock, "orders", seconds=3)
    run(store, clock, "orders", seconds=40, status="failed")
    run(store, clock, "orders", seconds=7, kind="replay")
    run(store, clock, "orders", seconds=100, status="running")
    run(store, clock, "users", seconds=12, status="stopped")

    figures = store.figures([5, 30, 60])

    assert [(c.connection, c.kind, c.status, c.count) for c in figures.run_counts] == [
        ("orders", "replay", "succeeded", 1), ("orders", "sync", "failed", 1),
        ("orders", "sync", "running", 1), ("orders", "sync", "succeeded", 1),
        ("users", "sync", "stopped", 1)]
    # Finished runs only: the stopped one is resumed later (see the next test).
    [orders] = figures.durations
    assert (orders.connection, orders.count, orders.buckets) == (
        "orders", 3, ((5.0, 1), (30.0, 2), (60.0, 3)))
    assert orders.sum_s == pytest.approx(50, abs=0.01)

    last = {r.connection: r for r in figures.last_runs}
    # The running run is not "last": only ended runs have a duration.
    assert (last["orders"].kind, last["orders"].status) == ("replay", "succeeded")
    assert last["orders"].ended_at - last["orders"].started_at == timedelta(seconds=7)
    # The last successful *sync* (a replay does not make data fresher).
    assert last["orders"].last_success_at == T0 + timedelta(seconds=3)
    assert (last["users"].status, last["users"].last_success_at) == ("stopped", None)


def test_a_stopped_then_resumed_run_enters_the_durations_once_finished(
        store: MetadataStore, clock: Clock) -> None:
    """Never counted, then uncounted: a histogram's counts going down read as a reset."""
    run_id = run(store, clock, "users", seconds=12, status="stopped")
    counts = [sum(h.count for h in store.figures([30]).durations)]
    store.start_attempt(run_id, pid=2, host="h")  # the next sync resumes it
    counts.append(sum(h.count for h in store.figures([30]).durations))
    clock.now += timedelta(seconds=8)
    store.finish_run(run_id, status="succeeded", stats={}, state_after={}, error=None)
    [users] = store.figures([30]).durations
    assert [*counts, users.count] == [0, 0, 1]
    # From its first attempt's start to its end, the time between attempts included.
    assert users.sum_s == pytest.approx(12 + 60 + 8, abs=0.01)


def test_a_connection_whose_only_run_is_running_has_no_last_run(
        store: MetadataStore, clock: Clock) -> None:
    run(store, clock, "orders", seconds=5, status="running")
    [last] = store.figures([1]).last_runs
    assert (last.connection, last.status, last.ended_at, last.last_success_at) == (
        "orders", None, None, None)
    assert store.figures([1]).durations == []


def test_stream_totals_sum_durable_checkpoints_once_each(
        store: MetadataStore, clock: Clock) -> None:
    first = run(store, clock, "orders", seconds=1, status="running", checkpoints={
        "users": [{"records_written": 100, "records_rejected": 2, "bytes": 4000},
                  {"records_written": 50, "records_rejected": 0, "bytes": 2500}],
        "orders": [{"records_written": 7, "bytes": 300},
                   {"status": "failed", "error": "boom"}]})
    # Released later with the same figures (as the engine does): still counted once.
    store.release_checkpoint(first, "users", 1, "cp1", state=DATE_RANGE,
                             stats={"records_written": 100, "records_rejected": 2,
                                    "bytes": 4000})
    store.finish_run(first, status="succeeded", stats={}, state_after={}, error=None)
    run(store, clock, "orders", seconds=1, checkpoints={
        "users": [{"records_written": 10, "records_rejected": 1, "bytes": 400}]})
    run(store, clock, "other", seconds=1, checkpoints={"users": [{"records_written": 1}]})

    totals = {(t.connection, t.stream): t for t in store.figures([1]).stream_totals}

    assert set(totals) == {("orders", "users"), ("orders", "orders"), ("other", "users")}
    users = totals["orders", "users"]
    assert (users.checkpoints, users.records_written, users.records_rejected, users.bytes) == (
        3, 160, 3, 6900)
    orders = totals["orders", "orders"]  # the failed checkpoint holds no data
    assert (orders.checkpoints, orders.records_written, orders.records_rejected,
            orders.bytes) == (1, 7, 0, 300)
    other = totals["other", "users"]  # figures a checkpoint lacks count as 0
    assert (other.records_written, other.records_rejected, other.bytes) == (1, 0, 0)


def test_states_are_the_current_ones(store: MetadataStore, clock: Clock) -> None:
    store.save_state("orders", "users", DATE_RANGE, run_id=None, checkpoint_index=None)
    store.save_state("orders", "events", {"cursor": 5}, run_id=None, checkpoint_index=None)
    store.reset_state("orders", ["events"])
    [state] = store.figures([1]).states
    assert (state.connection, state.stream, state.state, state.updated_at) == (
        "orders", "users", DATE_RANGE, T0)


def _users_written(store: MetadataStore) -> tuple[int, int]:
    [totals] = store.figures([1]).stream_totals
    return totals.checkpoints, totals.records_written


def test_stream_totals_stay_right_as_runs_finish_between_calls(
        store: MetadataStore, store_url: str, clock: Clock) -> None:
    """The finished runs' share is kept between calls: a run that finishes after one
    call is counted once in the next; a new store instance (process) counts the same."""
    run(store, clock, "orders", seconds=1, checkpoints={"users": [{"records_written": 100}]})
    assert _users_written(store) == (1, 100)
    second = run(store, clock, "orders", seconds=1, status="running",
                 checkpoints={"users": [{"records_written": 10}]})
    assert _users_written(store) == (2, 110)  # the running run, summed afresh
    store.record_checkpoint(second, "users", 2, "cp2", status="committed",
                            stats={"records_written": 5})
    assert _users_written(store) == (3, 115)
    store.finish_run(second, status="succeeded", stats={}, state_after={}, error=None)
    assert _users_written(store) == (3, 115)  # now finished: summed once, kept
    assert _users_written(store) == (3, 115)
    another = MetadataStore(store_url)
    try:
        assert _users_written(another) == (3, 115)
    finally:
        another.close()


def test_stream_totals_are_summed_anew_when_the_store_lost_a_run(
        store: MetadataStore, clock: Clock, tmp_path: Path) -> None:
    run(store, clock, "orders", seconds=1, checkpoints={"users": [{"records_written": 100}]})
    store.close()  # the last connection folds the WAL into the file
    database = tmp_path / ".headwater" / "headwater.db"
    older = database.read_bytes()
    run(store, clock, "orders", seconds=1, checkpoints={"users": [{"records_written": 10}]})
    assert _users_written(store) == (2, 110)

    store.close()
    assert not database.with_name("headwater.db-wal").exists()
    database.write_bytes(older)  # restored from the older copy
    assert _users_written(store) == (1, 100)
