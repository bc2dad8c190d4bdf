"""``headwater ui``'s server on 127.0.0.1 over a real store, with real syncs on the session's
Spark: the JSON after a sync started by the "sync now" button, replay, backfill plan,
reset, the safety rules (a token beyond loopback, cross-site POSTs), and no secret in
any answer.

The servers are real (:class:`~headwater.ui.UiServer`, a socket on 127.0.0.1 or
0.0.0.0), and so is every request (httpx).  The module shares one server and one
connection: the tests build on each other in file order (sync, then replay...).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from headwater import _events
from headwater.ui import UiServer, create_app
from tests.integration._connections import connection_file

pytestmark = pytest.mark.spark

API_KEY = "hw-sample-api-key-9f8e7d6c5b4a"  # the sample source's secret field
TOKEN = "hw-ui-token-0a1b2c3d4e5f6a7b"
SOURCE = {"users": 300, "orders": 0, "rows_per_partition": 100, "api_key": API_KEY}
#: Every answer any test got, for the last test's grep for secrets.
ANSWERS: list[str] = []
#: How long a sync may take on a loaded machine before the test gives up waiting.
PATIENCE_S = 600


class Page:
    """A client of one server, speaking as the page does (custom header, its Origin)."""

    def __init__(self, server: UiServer, token: str | None = None,
                 base: str | None = None) -> None:
        self.base = base or server.url
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.client = httpx.Client(base_url=self.base, headers=headers, timeout=60)

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        response = self.client.get(path, **kwargs)
        ANSWERS.append(response.text)
        return response

    def post(self, path: str, body: dict[str, Any] | None = None,
             headers: dict[str, str] | None = None) -> httpx.Response:
        sent = {"X-Headwater-Request": "1", "Origin": self.base, **(headers or {})}
        response = self.client.post(path, json=body or {}, headers=sent)
        ANSWERS.append(response.text)
        return response

    def wait_for(self, check: Callable[[dict[str, Any]], bool], path: str) -> dict[str, Any]:
        """Poll ``path`` (as the page does) until ``check`` holds for its JSON."""
        give_up = time.monotonic() + PATIENCE_S
        while True:
            document = self.get(path).json()
            if check(document):
                return document
            assert time.monotonic() < give_up, document
            time.sleep(0.5)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("ui")
    connection_file(folder, name="shop", source=SOURCE,
                    streams=[{"name": "users", "sync_mode": "incremental",
                              "destination_sync_mode": "append_dedup",
                              "primary_key": ["id"]}],
                    checkpoint={"partitions_per_checkpoint": 1}, schedule="0 3 * * *")
    (folder / "broken.yaml").write_text("name: broken\nsource: {type: no_such_source}\n"
                                        f"metadata_store: sqlite:///{folder / 'meta.db'}\n")
    return folder


@pytest.fixture(scope="module")
def page(spark: Any, folder: Path) -> Iterator[Page]:
    logging.getLogger("headwater").setLevel(logging.INFO)  # as `headwater ui` logs
    server = UiServer(create_app(folder), "127.0.0.1", 0)
    server.start()
    yield Page(server)
    server.shutdown("the tests are done")


def _last_run_ended(document: dict[str, Any]) -> bool:
    last = document["last_run"]
    return document["busy"] is None and last is not None and last["status"] != "running"


def test_sync_now_runs_a_sync_and_every_view_shows_it(page: Page) -> None:
    started = page.post("/api/connections/shop/sync")
    assert started.status_code == 202, started.text
    assert started.json()["started"] is True
    shop = page.wait_for(_last_run_ended, "/api/connections/shop")
    run = shop["last_run"]
    assert started.json()["run_id"] in (None, run["run_id"])
    assert (run["status"], run["kind"], run["records"], run["rejected"]) == (
        "succeeded", "sync", 300, 0)
    assert run["bytes"] > 0 and run["duration_s"] > 0 and run["rows_per_s"] > 0

    listing = page.get("/api/connections").json()["connections"]
    assert [c["name"] for c in listing][:2] == ["broken", "shop"]
    broken, listed = listing[:2]
    assert broken["valid"] is False and "no_such_source" in broken["problems"][0]
    assert listed["schedule"] == "0 3 * * *" and listed["next_firing"].endswith("03:00:00+00:00")
    assert (listed["source_type"], listed["destination_type"]) == ("sample", "delta")
    assert [r["run_id"] for r in listed["recent_runs"]] == [run["run_id"]]

    [stream] = shop["streams"]
    assert (stream["name"], stream["sync_mode"], stream["primary_key"]) == (
        "users", "incremental+append_dedup", ["id"])
    assert stream["cursor_field"] == "updated_at"
    assert stream["state_text"].startswith("read ") and stream["freshness_s"] is not None
    assert stream["table"].endswith("users")
    assert [r["run_id"] for r in shop["runs"]] == [run["run_id"]]

    detail = page.get(f"/api/runs/{run['run_id']}").json()
    [figures] = detail["streams"]
    assert (figures["records"], figures["partitions_done"], figures["partitions_planned"]) == (
        300, 3, 3)
    assert len(figures["checkpoints"]) == 3
    assert all(c["commit"] is not None for c in figures["checkpoints"])
    assert sorted(p["records"] for p in figures["partitions"]) == [100, 100, 100]
    assert detail["progress"]["live"] is False and detail["errors"] == []
    assert detail["state_before"] == {"users": None} and detail["state_after"]["users"]
    assert detail["plan"]["streams"][0]["stream"]["name"] == "users"
    # The page's sync is `headwater sync`'s path (operations.start_engine): early reads
    # asked, Spark's start timed, and the steps kept with the run (none of it before).
    assert {"early_reads", "spark_session", "lock", "plan", "store_writes",
            "checkpoints (Spark job + commit)"} <= set(detail["steps_s"])

    logs = page.get(f"/api/runs/{run['run_id']}/logs").json()
    assert logs["lines"] and logs["omitted"] == 0
    assert [line["seq"] for line in logs["lines"]] == list(range(1, len(logs["lines"]) + 1))
    later = page.get(f"/api/runs/{run['run_id']}/logs", params={"after": 1}).json()
    assert [line["seq"] for line in later["lines"]] == list(range(2, len(logs["lines"]) + 1))


def test_replay_reruns_a_past_run(page: Page) -> None:
    synced = page.get("/api/connections/shop").json()["last_run"]
    started = page.post(f"/api/runs/{synced['run_id']}/replay")
    assert started.status_code == 202, started.text
    shop = page.wait_for(lambda d: _last_run_ended(d) and d["last_run"]["kind"] == "replay",
                         "/api/connections/shop")
    replay = shop["last_run"]
    assert replay["status"] == "succeeded" and replay["records"] == 300
    assert page.get(f"/api/runs/{replay['run_id']}").json()["replay_of"] == synced["run_id"]
    assert page.post("/api/runs/no-such-run/replay").status_code == 404


def test_backfill_shows_its_plan_then_runs(page: Page) -> None:
    window = {"stream": "users", "from": "2024-01-01T00:00:00Z", "to": "2024-01-01T00:03:00Z"}
    plan = page.post("/api/connections/shop/backfill/plan", window)
    assert plan.status_code == 200, plan.text
    [stream] = plan.json()["streams"]
    assert stream["name"] == "users" and stream["partitions"] == len(stream["partition_list"])
    assert stream["partitions"] > 0 and plan.json()["moves_state"] is False
    wrong = page.post("/api/connections/shop/backfill/plan", {**window, "stream": "nope"})
    assert wrong.status_code == 400 and "nope" in wrong.json()["error"]
    started = page.post("/api/connections/shop/backfill", window)
    assert started.status_code == 202, started.text
    shop = page.wait_for(lambda d: _last_run_ended(d) and d["last_run"]["kind"] == "backfill",
                         "/api/connections/shop")
    assert shop["last_run"]["status"] == "succeeded"


def test_reset_needs_its_confirmation(page: Page) -> None:
    before = page.get("/api/connections/shop").json()["streams"][0]["state"]
    assert before is not None
    refused = page.post("/api/connections/shop/streams/users/reset")
    assert refused.status_code == 400
    assert "the next sync reads the stream from the start" in refused.json()["error"]
    assert page.get("/api/connections/shop").json()["streams"][0]["state"] == before
    done = page.post("/api/connections/shop/streams/users/reset", {"confirm": "users"})
    assert done.status_code == 200, done.text
    assert done.json() == {"connection": "shop", "reset": ["users"], "before": before}
    [stream] = page.get("/api/connections/shop").json()["streams"]
    assert stream["state"] is None and stream["state_text"].startswith("no state yet")


def test_stop_ends_a_running_sync_after_its_commit_in_flight(page: Page, folder: Path) -> None:
    """The run is held right after its first commit (a listener of the engine's moments)
    while the test looks at it live, stops it, and tries a second sync."""
    connection_file(folder, name="slow", source={**SOURCE, "users": 300},
                    streams=[{"name": "users", "sync_mode": "incremental"}],
                    checkpoint={"partitions_per_checkpoint": 1, "concurrent_checkpoints": 1})
    committed, go_on = threading.Event(), threading.Event()

    def hold_after_first_commit(moment: str) -> None:
        if moment == "after-commit" and not committed.is_set():
            committed.set()
            go_on.wait(PATIENCE_S)

    _events.listen(hold_after_first_commit)
    try:
        assert page.post("/api/connections/slow/sync").status_code == 202
        assert committed.wait(PATIENCE_S)
        running = page.get("/api/connections/slow").json()
        assert running["busy"] == "sync" and running["last_run"]["status"] == "running"
        run_id = running["last_run"]["run_id"]
        live = page.get(f"/api/runs/{run_id}").json()
        assert live["status"] == "running" and live["progress"]["live"] is True
        assert live["progress"]["partitions_planned"] == 3
        again = page.post("/api/connections/slow/sync")
        assert again.status_code == 409 and "already running" in again.json()["error"]
        stopping = page.post(f"/api/runs/{run_id}/stop")
        assert stopping.status_code == 202 and stopping.json()["stopping"] is True
    finally:
        go_on.set()
        _events.clear()
    slow = page.wait_for(_last_run_ended, "/api/connections/slow")
    stopped = slow["last_run"]
    assert (stopped["run_id"], stopped["status"]) == (run_id, "stopped")
    detail = page.get(f"/api/runs/{run_id}").json()
    assert detail["progress"]["partitions_done"] == 1 and detail["progress"]["live"] is False
    assert "stopped from the web page" in detail["error"]
    not_running = page.post(f"/api/runs/{run_id}/stop")
    assert not_running.status_code == 409 and "not running" in not_running.json()["error"]


def test_a_cross_site_post_is_refused(page: Page) -> None:
    evil = page.post("/api/connections/shop/sync", headers={"Origin": "http://evil.example"})
    assert evil.status_code == 403
    response = page.client.post("/api/connections/shop/sync", json={})  # a form: no header
    assert response.status_code == 403
    assert page.get("/api/connections/shop").json()["busy"] is None


def test_beyond_loopback_the_token_is_required(spark: Any, folder: Path) -> None:
    """Bound to 0.0.0.0 (every address) with a token; reached through 127.0.0.1."""
    server = UiServer(create_app(folder, token=TOKEN), "0.0.0.0", 0)
    server.start()
    try:
        base = f"http://127.0.0.1:{server.port}"
        anonymous = Page(server, base=base)
        assert anonymous.get("/api/connections").status_code == 401
        assert anonymous.get("/api/runs/x").status_code == 401
        refused = anonymous.post("/api/connections/shop/streams/users/reset",
                                 {"confirm": "users"})
        assert refused.status_code == 401
        wrong = Page(server, token="not-the-token", base=base)
        assert wrong.get("/api/connections").status_code == 401
        allowed = Page(server, token=TOKEN, base=base)
        assert allowed.get("/api/connections").status_code == 200
        assert allowed.get("/").status_code == 200  # the page itself asks for the token
        evil = allowed.post("/api/connections/shop/streams/users/reset", {"confirm": "users"},
                            headers={"Origin": "http://evil.example"})
        assert evil.status_code == 403
    finally:
        server.shutdown("test done")


def test_no_answer_holds_a_secret(page: Page) -> None:
    shop = page.get("/api/connections/shop").json()
    for run in shop["runs"]:
        page.get(f"/api/runs/{run['run_id']}")
        page.get(f"/api/runs/{run['run_id']}/logs")
    page.get("/api/connections")
    page.get("/api/connections/broken")
    page.get("/")
    page.post("/api/connections/shop/backfill/plan", {"stream": "users", "from": "x", "to": "y"})
    assert len(ANSWERS) > 20
    leaks = [answer for answer in ANSWERS if API_KEY in answer or TOKEN in answer]
    assert leaks == []
    assert any("**********" in answer for answer in ANSWERS)  # the config shows it masked
