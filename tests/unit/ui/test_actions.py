"""The actions' refusals, which need no Spark: each says why, with the status that fits."""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater.metadata_store import MetadataStore
from headwater.ui import create_app
from tests.unit.ui._client import PAGE_HEADERS, call


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    folder = tmp_path / "c"
    folder.mkdir()
    store = f"sqlite:///{tmp_path / 'meta.db'}"
    (folder / "shop.yaml").write_text(
        "name: shop\nsource: {type: sample, config: {users: 10}}\n"
        "streams: [{name: users, sync_mode: incremental}]\n"
        f"metadata_store: {store}\n")
    (folder / "bad.yaml").write_text("name: bad\nsource: {type: nope}\n"
                                     f"metadata_store: {store}\n")
    return folder


def _post(folder: Path, path: str,
          body: dict[str, object] | None = None) -> tuple[int, dict[str, str]]:
    return call(create_app(folder), "POST", path, json=body or {}, headers=PAGE_HEADERS)


def test_a_run_of_another_process_is_stopped_where_it_runs(folder: Path) -> None:
    store = MetadataStore(f"sqlite:///{folder.parent / 'meta.db'}")
    run_id = store.create_run("shop", plan={"connection": "shop", "streams": []},
                              state_before={}, config_redacted={})
    store.start_attempt(run_id, pid=4242, host="elsewhere")
    status, body = _post(folder, f"/api/runs/{run_id}/stop")
    assert status == 409
    assert "process 4242 on elsewhere" in body["error"] and "stop it there" in body["error"]
    store.finish_run(run_id, status="succeeded", stats={}, state_after={}, error=None)
    status, body = _post(folder, f"/api/runs/{run_id}/stop")
    assert status == 409 and "is not running (it is succeeded)" in body["error"]
    assert _post(folder, "/api/runs/nope/stop")[0] == 404


def test_a_connection_another_process_syncs_is_refused(folder: Path) -> None:
    store = MetadataStore(f"sqlite:///{folder.parent / 'meta.db'}")
    with store.lock("shop"):
        status, body = _post(folder, "/api/connections/shop/sync")
        assert status == 409 and "is being synced by process" in body["error"]
        status, body = _post(folder, "/api/connections/shop/streams/users/reset",
                             {"confirm": "users"})
        assert status == 409


def test_bad_requests_say_what_is_wrong(folder: Path) -> None:
    status, body = _post(folder, "/api/connections/bad/sync")
    assert status == 400 and "does not validate" in body["error"] and "nope" in body["error"]
    assert _post(folder, "/api/connections/missing/sync")[0] == 404
    status, body = _post(folder, "/api/connections/shop/backfill/plan", {"stream": "users"})
    assert status == 400 and "from" in body["error"]
    status, body = _post(folder, "/api/connections/shop/backfill/plan",
                         {"stream": "users", "from": "yesterday", "to": "today"})
    assert status == 400 and "updated_at" in body["error"]
    status, body = call(create_app(folder), "POST", "/api/connections/shop/sync",
                        data="not json", headers={**PAGE_HEADERS,
                                                  "Content-Type": "application/json"})
    assert status == 400 and "JSON object" in body["error"]
    status, body = call(create_app(folder), "GET", "/api/connections/shop?limit=x")
    assert status == 400
    status, body = call(create_app(folder), "GET", "/api/no-such-route")
    assert status == 404 and "error" in body


def test_a_replay_or_backfill_waits_for_a_stopped_run_to_be_finished(folder: Path) -> None:
    """Refused before the job starts (409), not on its thread after a 202: the page would
    wait for a run that never comes."""
    store = MetadataStore(f"sqlite:///{folder.parent / 'meta.db'}")
    done = store.create_run("shop", plan={"connection": "shop", "streams": []},
                            state_before={}, config_redacted={})
    store.finish_run(done, status="succeeded", stats={}, state_after={}, error=None)
    stopped = store.create_run("shop", plan={"connection": "shop", "streams": []},
                               state_before={}, config_redacted={}, kind="replay")
    store.stop_run(stopped, stats={}, state_after={}, error="stopped from the web page")
    status, body = _post(folder, f"/api/runs/{done}/replay")
    assert status == 409
    assert f"stopped run {stopped} (a replay)" in body["error"] and "Sync now" in body["error"]
    status, body = _post(folder, "/api/connections/shop/backfill",
                         {"stream": "users", "from": "2024-01-01T00:00:00Z",
                          "to": "2024-01-01T00:01:00Z"})
    assert status == 409 and f"stopped run {stopped}" in body["error"]


def test_a_backfill_of_a_connection_never_synced_starts_no_store(folder: Path) -> None:
    """Refused (409) before the job starts: a backfill reads again what a sync read, and a
    store started by it would number its commits from 0 beside the table's."""
    status, body = _post(folder, "/api/connections/shop/backfill",
                         {"stream": "users", "from": "2024-01-01T00:00:00Z",
                          "to": "2024-01-01T00:01:00Z"})
    assert status == 409 and "no metadata store yet" in body["error"]
    assert not (folder.parent / "meta.db").exists()


def test_unknown_things_are_404_and_a_malformed_page_anchor_400(folder: Path) -> None:
    """Item 7 of issue 39: a reset of a stream the connection does not have answered 200,
    and ``?before=nope`` an empty page."""
    assert call(create_app(folder), "GET", "/api/runs/nope")[0] == 404  # no store yet
    MetadataStore(f"sqlite:///{folder.parent / 'meta.db'}").close()  # a store, no runs
    status, body = _post(folder, "/api/connections/shop/streams/nope/reset", {"confirm": "nope"})
    assert status == 404 and "'nope'" in body["error"] and "users" in body["error"]
    status, body = call(create_app(folder), "GET", "/api/connections/shop?before=nope")
    assert status == 400 and "?before=" in body["error"] and "run id such as" in body["error"]
    status, body = call(create_app(folder), "GET",
                        "/api/connections/shop?before=20261122T041500Z-1a2b3c")
    assert status == 404 and "20261122T041500Z-1a2b3c" in body["error"]
    for path in ("/api/runs/nope", "/api/runs/nope/logs", "/api/connections/nope"):
        status, body = call(create_app(folder), "GET", path)
        assert status == 404 and "'nope'" in body["error"], path
