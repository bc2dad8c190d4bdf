"""The API's JSON shapes: run summaries, a stream's state in words, a run's figures."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from headwater.metadata_store import LiveFigure, MetadataStore
from headwater.ui import _views as views

NOW = datetime(2026, 11, 20, 15, 0, tzinfo=UTC)
SLICES = {"state_type": "date-range", "cursor_field": "updated_at",
          "slices": [{"start": "2026-01-01T00:00:00Z", "end": "2026-11-20T14:00:00Z"}]}


def test_state_in_words_and_freshness() -> None:
    assert views.state_text(SLICES) == "read from 2026-01-01 00:00 up to 2026-11-20 14:00"
    assert views.newest_cursor(SLICES) == "2026-11-20T14:00:00Z"
    assert views.freshness_s(SLICES, NOW) == 3600.0
    gaps = {"slices": [{"start": "", "end": "2026-11-19"},
                       {"start": "2026-11-19T12:00:00Z", "end": "2026-11-20T10:00:00Z"}]}
    assert views.state_text(gaps) == ("read up to 2026-11-19, and 1 later range(s) up to "
                                      "2026-11-20 10:00 (gaps are read by the next sync)")
    numbers = {"slices": [{"start": 0, "end": 500}]}
    assert views.state_text(numbers) == "read from 0 up to 500"
    assert views.freshness_s(numbers, NOW) is None
    assert views.state_text(None).startswith("no state yet")
    assert views.state_text({"__ab_full_refresh_sync_complete": True}).startswith("full refresh")
    assert views.state_text({"lsn": "0/16B3748"}) == "the connector's own state (1 key(s))"
    # An object storage stream's state, as a person reads it (not "own state (4 key(s))").
    objects = {"state_type": "object-keys", "floor": "2024/01/31/z.csv",
               "recent": {"2024/02/01/a.csv": "e1", "2024/02/02/b.csv": "e2"},
               "in_flight": {"2024/02/03/big.jsonl": {"identity": "e3", "unit": "bytes",
                                                      "total": 10, "done": [[0, 5]]}}}
    assert views.state_text(objects) == (
        "2 object(s) read, up to key 2024/02/02/b.csv; every key up to 2024/01/31/z.csv "
        "counts as read; 1 large object(s) read in part (the next sync reads the rest)")
    assert views.state_text({"state_type": "object-keys", "floor": None, "recent": {},
                             "in_flight": {}}) == "no object read yet"


def _store(tmp_path: Path) -> MetadataStore:
    return MetadataStore(MetadataStore.default_url(tmp_path))


PLAN = {"connection": "c", "streams": [{
    "stream": {"name": "users", "sync_mode": "incremental",
               "destination_sync_mode": "append", "cursor_field": "updated_at",
               "primary_key": ["id"]},
    "state_before": None, "lanes": 1,
    "checkpoints": [{"index": 1, "checkpoint_id": "a", "lane": 0,
                     "partitions": [{"id": "p1"}, {"id": "p2"}]},
                    {"index": 2, "checkpoint_id": "b", "lane": 0,
                     "partitions": [{"id": "p3"}]}]}]}


def test_a_running_run_shows_what_is_committed_so_far(tmp_path: Path) -> None:
    store = _store(tmp_path)
    run_id = store.create_run("c", plan=PLAN, state_before={"users": None},
                              config_redacted={"destination": {"type": "delta"}})
    store.start_attempt(run_id, pid=1, host="h")
    figures = [{"partition": p, "records_read": 5, "records_written": 5, "records_rejected": 0,
                "bytes": 50, "duration_s": 0.5, "retries": 0} for p in ("p1", "p2")]
    store.record_checkpoint(run_id, "users", 1, "a", status="committed", stats={
        "records_written": 10, "records_rejected": 1, "bytes": 100, "duration_s": 2.0,
        "delta_version": 7, "partitions": ["p1", "p2"], "partition_stats": figures})
    run = store.get_run(run_id)
    assert run is not None
    now = run.started_at + timedelta(seconds=4)
    # Checkpoint 2's one partition is being read: its task has reported 7 records so far.
    live = [LiveFigure("users", 2, "p3", 7, now)]
    detail = views.run_detail(run, store.list_checkpoints(run_id), "delta_version", now, live)
    assert detail["status"] == "running" and detail["duration_s"] == 4.0
    assert detail["progress"] == {"records": 10, "partitions_done": 2, "partitions_planned": 3,
                                  "rows_per_s": 2.5, "records_reading": 7,
                                  "partitions_reading": 1, "live": True}
    [stream] = detail["streams"]
    assert stream["checkpoints"] == [{"index": 1, "checkpoint_id": "a", "status": "committed",
                                      "records": 10, "bytes": 100, "duration_s": 2.0,
                                      "commit": 7, "error": None}]
    assert [(p["partition_id"], p["status"], p["records"]) for p in stream["partitions"]] == [
        ("p1", "committed", 5), ("p2", "committed", 5), ("p3", "reading", 7)]
    assert stream["records"] == 10 and stream["records_reading"] == 7
    assert detail["plan"] == PLAN and detail["errors"] == []


def test_a_failed_checkpoint_names_its_partitions_in_the_errors(tmp_path: Path) -> None:
    store = _store(tmp_path)
    run_id = store.create_run("c", plan=PLAN, state_before={}, config_redacted={})
    store.start_attempt(run_id, pid=1, host="h")
    store.record_checkpoint(run_id, "users", 2, "b", status="failed",
                            stats={"attempt": 1, "error": "HTTP 500 from the API"})
    store.finish_run(run_id, status="failed", error="users: HTTP 500 from the API",
                     state_after={}, stats={"streams": [{
                         "name": "users", "status": "failed", "records_written": 0,
                         "records_rejected": 0, "bytes": 0,
                         "error": "HTTP 500 from the API"}]})
    run = store.get_run(run_id)
    assert run is not None
    detail = views.run_detail(run, store.list_checkpoints(run_id), "delta_version", NOW)
    # Said once, on the partition that failed (not again as the stream's error).
    assert detail["errors"] == [{"stream": "users", "checkpoint_index": 2,
                                 "partition_id": "p3", "message": "HTTP 500 from the API"}]
    # The run ended: every planned partition says what became of it.
    [stream] = detail["streams"]
    assert [(p["partition_id"], p["status"], p["error"]) for p in stream["partitions"]] == [
        ("p1", "not started", "not started: the stream stopped when checkpoint 2 failed"),
        ("p2", "not started", "not started: the stream stopped when checkpoint 2 failed"),
        ("p3", "failed", "HTTP 500 from the API")]
    summary = views.run_summary(store.list_run_summaries("c")[0], NOW)
    assert summary["status"] == "failed" and summary["records"] == 0
    assert detail["progress"]["live"] is False


def test_a_stopped_runs_reason_is_said_but_is_no_error(tmp_path: Path) -> None:
    store = _store(tmp_path)
    run_id = store.create_run("c", plan=PLAN, state_before={}, config_redacted={})
    store.start_attempt(run_id, pid=1, host="h")
    store.stop_run(run_id, stats={"streams": []}, state_after={},
                   error="stopped from the web page; the next sync resumes it")
    run = store.get_run(run_id)
    assert run is not None
    detail = views.run_detail(run, store.list_checkpoints(run_id), "delta_version", NOW)
    assert detail["status"] == "stopped" and detail["errors"] == []
    assert detail["error"].startswith("stopped from the web page")


def test_a_warned_runs_warnings_are_said_per_stream_and_are_no_error(tmp_path: Path) -> None:
    store = _store(tmp_path)
    run_id = store.create_run("c", plan=PLAN, state_before={}, config_redacted={})
    store.start_attempt(run_id, pid=1, host="h")
    warning = "every record read was rejected (8 of 8; why is in the table's _hw_notes)"
    store.finish_run(run_id, status="warned", state_after={}, error=f"users: {warning}",
                     stats={"streams": [{"name": "users", "status": "warned",
                                         "records_read": 8, "records_rejected": 8,
                                         "warnings": [warning]}]})
    run = store.get_run(run_id)
    assert run is not None
    detail = views.run_detail(run, store.list_checkpoints(run_id), "delta_version", NOW)
    assert detail["status"] == "warned" and detail["errors"] == []
    assert detail["error"] == f"users: {warning}"
    [stream] = [s for s in detail["streams"] if s["name"] == "users"]
    assert stream["status"] == "warned" and stream["warnings"] == [warning]


def test_a_resumed_run_counts_what_every_attempt_committed(tmp_path: Path) -> None:
    """Its record holds the last attempt's figures (the engine skips, and so does not
    count, what an earlier attempt committed); the run page shows what the run landed."""
    store = _store(tmp_path)
    run_id = store.create_run("c", plan=PLAN, state_before={}, config_redacted={})
    store.start_attempt(run_id, pid=1, host="h")
    store.record_checkpoint(run_id, "users", 1, "a", status="released", stats={
        "records_written": 10, "records_rejected": 1, "bytes": 100, "partitions": ["p1", "p2"]})
    store.stop_run(run_id, stats={}, state_after={}, error="stopped")
    store.start_attempt(run_id, pid=2, host="h")
    store.record_checkpoint(run_id, "users", 2, "b", status="released", stats={
        "records_written": 5, "records_rejected": 0, "bytes": 40, "partitions": ["p3"]})
    store.finish_run(run_id, status="succeeded", error=None, state_after={}, stats={
        "streams": [{"name": "users", "status": "succeeded", "records_written": 5,
                     "records_rejected": 0, "bytes": 40}]})
    run = store.get_run(run_id)
    assert run is not None and len(run.attempts) == 2
    detail = views.run_detail(run, store.list_checkpoints(run_id), "delta_version", NOW)
    [stream] = detail["streams"]
    assert (stream["records"], stream["rejected"], stream["bytes"]) == (15, 1, 140)
    assert (detail["records"], detail["rejected"], detail["bytes"]) == (15, 1, 140)
    assert detail["progress"]["records"] == 15
    assert detail["progress"]["partitions_done"] == detail["progress"]["partitions_planned"] == 3


def test_run_summaries_page_back_newest_first(tmp_path: Path) -> None:
    store = _store(tmp_path)
    ids = [store.create_run("c", plan=PLAN, state_before={}, config_redacted={})
           for _ in range(5)]
    newest_first = sorted(ids, reverse=True)  # ids sort by start time, then at random
    found = [s.run_id for s in store.list_run_summaries("c", limit=2)]
    assert found == [s.run_id for s in store.list_run_summaries("c")][:2]
    rest = [s.run_id for s in store.list_run_summaries("c", limit=10, before=found[-1])]
    assert found + rest == [s.run_id for s in store.list_run_summaries("c", limit=10)]
    assert sorted(found + rest, reverse=True) == newest_first
    other = store.create_run("d", plan=PLAN, state_before={}, config_redacted={})
    store.start_attempt(other, pid=1, host="h")
    store.finish_run(other, status="succeeded", state_after={}, error=None,
                     stats={"streams": [{"name": "users", "records_written": 3}]})
    recent = store.recent_run_summaries(["c", "d", "e"], 2)
    assert [s.run_id for s in recent["c"]] == found and recent["e"] == []
    assert recent["d"][0].stats == {"streams": [{"name": "users", "records_written": 3}]}


def test_a_short_run_s_rate_is_its_records_over_the_duration_shown() -> None:
    """The run page recomputes a resumed run's rate from ``duration_s``; the lists must agree."""
    from headwater.metadata_store import RunSummary

    started = NOW - timedelta(seconds=1)
    run = RunSummary(run_id="r", connection="c", kind="sync", status="succeeded",
                     started_at=started, ended_at=started + timedelta(seconds=0.55745),
                     stats={"streams": [{"records_written": 300}]}, error=None)
    summary = views.run_summary(run, NOW)
    assert summary["duration_s"] == 0.557
    assert summary["rows_per_s"] == round(300 / 0.557, 1) == 538.6


def test_the_last_run_is_the_resumed_one_not_its_empty_follow_up(tmp_path: Path) -> None:
    """``headwater sync`` finishes a stopped run, then syncs what is new in a run of its own:
    with nothing new that one is empty, and the list's "last run" showed "0 records"."""
    store = _store(tmp_path)
    resumed = store.create_run("c", plan=PLAN, state_before={}, config_redacted={})
    store.finish_run(resumed, status="succeeded", state_after={}, error=None,
                     stats={"streams": [{"name": "users", "records_written": 300}]})
    empty = store.create_run("c", plan=PLAN, state_before={}, config_redacted={})
    store.finish_run(empty, status="succeeded", state_after={}, error=None,
                     stats={"streams": [{"name": "users", "records_written": 0}],
                            "follows_resumed": resumed})
    summaries = store.list_run_summaries("c")
    runs = [views.run_summary(s, NOW) for s in summaries]
    shown = views.last_run(runs, summaries)
    assert shown is not None and (shown["run_id"], shown["records"]) == (resumed, 300)
    later = store.create_run("c", plan=PLAN, state_before={}, config_redacted={})
    store.finish_run(later, status="succeeded", state_after={}, error=None,
                     stats={"streams": [{"name": "users", "records_written": 0}]})
    summaries = store.list_run_summaries("c")
    shown = views.last_run([views.run_summary(s, NOW) for s in summaries], summaries)
    assert shown is not None and shown["run_id"] == later  # a plain empty sync is the last
