"""Runs, attempts and checkpoints: what a sync records so it can be resumed."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest

from headwater.errors import MetadataStoreError
from headwater.metadata_store import MetadataStore

PLAN: dict[str, Any] = {
    "streams": {
        "orders": {
            "state": {"cursor": "2024-01-01"},
            "checkpoints": [
                {"index": 11, "checkpoint_id": "2024-01-01/2024-01-02", "partitions": [{"a": 1}]},
                {"index": 12, "checkpoint_id": "2024-01-02/2024-01-03", "partitions": [{"a": 2}]},
            ],
        }
    }
}


def new_run(store: MetadataStore, connection: str = "orders_to_lake") -> str:
    return store.create_run(
        connection,
        plan=PLAN,
        state_before={"orders": {"cursor": "2024-01-01"}},
        config_redacted={"source": {"api_key": "**********"}},
    )


def test_run_lifecycle_with_attempts_and_checkpoints(store: MetadataStore) -> None:
    run_id = new_run(store)
    assert re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{6}", run_id)
    run = store.get_run(run_id)
    assert run is not None
    assert (run.connection, run.kind, run.status) == ("orders_to_lake", "sync", "running")
    assert run.plan == PLAN
    assert run.config_redacted == {"source": {"api_key": "**********"}}
    assert run.state_after is None and run.ended_at is None and run.attempts == []
    assert run.started_at.utcoffset() == timedelta(0)

    attempt = store.start_attempt(run_id, pid=4242, host="worker-1")
    assert attempt == 1
    stats = {"records_read": 10, "records_written": 9, "records_rejected": 1, "attempt": 1}
    store.record_checkpoint(
        run_id, "orders", 11, "2024-01-01/2024-01-02", status="committed", stats=stats
    )
    store.record_checkpoint(
        run_id,
        "orders",
        11,
        "2024-01-01/2024-01-02",
        status="released",
        stats={**stats, "delta_version": 3},
    )
    store.record_checkpoint(
        run_id, "orders", 12, "2024-01-02/2024-01-03", status="failed", stats={"records_read": 0}
    )

    checkpoints = store.list_checkpoints(run_id)
    assert [(c.stream, c.index, c.status) for c in checkpoints] == [
        ("orders", 11, "released"),
        ("orders", 12, "failed"),
    ]
    assert checkpoints[0].stats["delta_version"] == 3
    assert store.released_indices(run_id, "orders") == {11}
    assert store.released_indices(run_id, "users") == set()

    store.finish_attempt(run_id, attempt, status="failed", error="boom")
    store.finish_run(
        run_id,
        status="failed",
        stats={"orders": {"records_written": 9}},
        state_after={"orders": {"cursor": "2024-01-02"}},
        error="stream orders failed",
    )
    run = store.get_run(run_id)
    assert run is not None
    assert run.status == "failed" and run.error == "stream orders failed"
    assert run.state_after == {"orders": {"cursor": "2024-01-02"}}
    assert run.stats == {"orders": {"records_written": 9}}
    assert run.ended_at is not None and run.ended_at >= run.started_at
    [only] = run.attempts
    assert (only.number, only.status, only.pid, only.host, only.error) == (
        1,
        "failed",
        4242,
        "worker-1",
        "boom",
    )


def test_a_finished_run_cannot_change(store: MetadataStore) -> None:
    run_id = new_run(store)
    store.finish_run(run_id, status="succeeded", stats={}, state_after={}, error=None)
    with pytest.raises(MetadataStoreError, match="already finished with status succeeded"):
        store.finish_run(run_id, status="failed", stats={}, state_after={}, error="late")
    with pytest.raises(MetadataStoreError, match="already finished"):
        store.start_attempt(run_id, pid=1, host="h")
    # Nor its checkpoints: what a finished run committed is final (/metrics keeps it).
    with pytest.raises(MetadataStoreError, match=r"already finished.*checkpoints are final"):
        store.record_checkpoint(run_id, "s", 1, "p", status="committed", stats={})
    with pytest.raises(MetadataStoreError, match="already finished"):
        store.release_checkpoint(run_id, "s", 1, "p", state={"cursor": 1}, stats={})
    run = store.get_run(run_id)
    assert run is not None and run.status == "succeeded"
    assert store.list_checkpoints(run_id) == [] and store.get_state("orders_to_lake", "s") is None


def test_unknown_runs_attempts_and_statuses_are_refused(store: MetadataStore) -> None:
    assert store.get_run("nope") is None
    with pytest.raises(MetadataStoreError, match="no run nope"):
        store.record_checkpoint("nope", "s", 1, "p", status="committed", stats={})
    with pytest.raises(MetadataStoreError, match="no run nope"):
        store.start_attempt("nope", pid=1, host="h")
    run_id = new_run(store)
    with pytest.raises(MetadataStoreError, match="no attempt 7"):
        store.finish_attempt(run_id, 7, status="succeeded")
    with pytest.raises(ValueError):
        store.finish_run(run_id, status="running", stats={}, state_after={}, error=None)
    with pytest.raises(ValueError):
        store.record_checkpoint(run_id, "s", 1, "p", status="done", stats={})  # type: ignore[arg-type]


def test_unfinished_run_is_found_and_resumed_with_a_new_attempt(store: MetadataStore) -> None:
    assert store.find_unfinished_run("orders_to_lake") is None
    run_id = new_run(store)
    store.start_attempt(run_id, pid=100, host="h")  # then the process is SIGKILLed
    new_run(store, connection="another")

    unfinished = store.find_unfinished_run("orders_to_lake")
    assert unfinished is not None
    assert unfinished.run_id == run_id and unfinished.plan == PLAN

    assert store.start_attempt(run_id, pid=200, host="h") == 2
    run = store.get_run(run_id)
    assert run is not None
    assert [(a.number, a.status, a.pid) for a in run.attempts] == [
        (1, "failed", 100),
        (2, "running", 200),
    ]
    store.finish_attempt(run_id, 2, status="succeeded")
    store.finish_run(run_id, status="succeeded", stats={}, state_after={}, error=None)
    assert store.find_unfinished_run("orders_to_lake") is None


def test_list_runs_newest_first_by_connection_and_limit(store: MetadataStore) -> None:
    first = new_run(store, "a")
    second = new_run(store, "b")
    third = new_run(store, "a")
    assert [r.run_id for r in store.list_runs()] == [third, second, first]
    assert [r.run_id for r in store.list_runs("a")] == [third, first]
    assert [r.run_id for r in store.list_runs(limit=1)] == [third]
    assert store.list_runs("nobody") == []


def test_release_checkpoint_moves_state_and_marks_it_released_together(
    store: MetadataStore,
) -> None:
    run_id = new_run(store)
    store.release_checkpoint(
        run_id, "orders", 11, "cp-11", state={"cursor": "b"}, stats={"records_written": 3}
    )
    assert store.get_state("orders_to_lake", "orders") == {"cursor": "b"}
    assert store.released_indices(run_id, "orders") == {11}
    [history] = store.state_history("orders_to_lake", "orders")
    assert (history.run_id, history.checkpoint_index) == (run_id, 11)

    # A lower index would move state back: neither the state nor the checkpoint changes.
    with pytest.raises(MetadataStoreError, match="move back"):
        store.release_checkpoint(run_id, "orders", 10, "cp-10", state={"cursor": "a"}, stats={})
    assert store.get_state("orders_to_lake", "orders") == {"cursor": "b"}
    assert store.released_indices(run_id, "orders") == {11}
    assert [c.index for c in store.list_checkpoints(run_id)] == [11]


def test_plan_that_is_not_json_is_refused(store: MetadataStore) -> None:
    with pytest.raises(MetadataStoreError):
        store.create_run("c", plan={"when": object()}, state_before={}, config_redacted={})
    assert store.list_runs("c") == []


def test_a_stopped_run_stays_unfinished_and_is_resumed_as_running(store: MetadataStore) -> None:
    run_id = new_run(store)
    store.start_attempt(run_id, pid=100, host="h")
    store.finish_attempt(run_id, 1, status="stopped", error="SIGINT")
    store.stop_run(run_id, stats={"orders": {"records_written": 4}},
                   state_after={"orders": {"cursor": "2024-01-02"}}, error="stopped by SIGINT")
    stopped = store.get_run(run_id)
    assert stopped is not None
    assert (stopped.status, stopped.error) == ("stopped", "stopped by SIGINT")
    assert stopped.ended_at is not None and stopped.state_after is not None
    assert [(a.number, a.status) for a in stopped.attempts] == [(1, "stopped")]
    # A stopped run is neither finished nor stopped twice before an attempt resumes it.
    with pytest.raises(MetadataStoreError, match="is stopped"):
        store.finish_run(run_id, status="succeeded", stats={}, state_after={}, error=None)
    with pytest.raises(MetadataStoreError, match="is stopped"):
        store.stop_run(run_id, stats={}, state_after={}, error="again")

    found = store.find_unfinished_run("orders_to_lake")
    assert found is not None and found.run_id == run_id
    assert store.start_attempt(run_id, pid=200, host="h") == 2
    resumed = store.get_run(run_id)
    assert resumed is not None
    assert (resumed.status, resumed.ended_at, resumed.state_after, resumed.error) == \
        ("running", None, None, None)
    assert [(a.number, a.status) for a in resumed.attempts] == [(1, "stopped"), (2, "running")]
    store.finish_attempt(run_id, 2, status="succeeded")
    store.finish_run(run_id, status="succeeded", stats={}, state_after={}, error=None)
    assert store.find_unfinished_run("orders_to_lake") is None
    with pytest.raises(ValueError):
        store.finish_run(new_run(store), status="stopped", stats={}, state_after={}, error=None)


def test_partition_states_are_staged_per_checkpoint_replaced_and_cleared(
    store: MetadataStore,
) -> None:
    run_id = new_run(store)
    assert store.staged_partition_states(run_id, "orders", 4) == {}
    store.stage_partition_states(run_id, "orders", 4, {"p0": {"cursor": 1}})
    store.stage_partition_states(run_id, "orders", 4, {"p0": {"cursor": 2}, "p1": {"c": [1]}})
    store.stage_partition_states(run_id, "orders", 5, {"p0": {"cursor": 9}})
    assert store.staged_partition_states(run_id, "orders", 4) == {
        "p0": {"cursor": 2}, "p1": {"c": [1]}}
    store.clear_partition_states(run_id, "orders", 4)
    assert store.staged_partition_states(run_id, "orders", 4) == {}
    assert store.staged_partition_states(run_id, "orders", 5) == {"p0": {"cursor": 9}}
    with pytest.raises(MetadataStoreError, match="no run"):
        store.stage_partition_states("nope", "orders", 4, {"p0": {}})


@pytest.mark.parametrize("ending", ["finished", "stopped"])
def test_errors_and_figures_are_stored_masked_whoever_records_them(
        store: MetadataStore, ending: str) -> None:
    from headwater.config import REDACTED, register_secrets
    from headwater.config._secrets import _registry

    register_secrets(["s3cr3t-token-value"])
    try:
        run_id = new_run(store)
        store.start_attempt(run_id, pid=1, host="h")
        leaky = "catalog postgressql://loader:pw@127.0.0.1/iceberg refused s3cr3t-token-value"
        store.finish_attempt(run_id, 1, status="failed", error=leaky)
        stats = {"orders": {"error": leaky, "records_written": 3}}
        if ending == "finished":
            store.finish_run(run_id, status="failed", stats=stats, state_after={}, error=leaky)
        else:
            store.stop_run(run_id, stats=stats, state_after={}, error=leaky)
    finally:
        _registry.clear()
    run = store.get_run(run_id)
    assert run is not None
    masked = f"catalog postgressql://loader:{REDACTED}@127.0.0.1/iceberg refused {REDACTED}"
    assert (run.error, run.attempts[0].error) == (masked, masked)
    assert run.stats == {"orders": {"error": masked, "records_written": 3}}
