"""The web page walked in a real browser, as a person would (issue 21).

Headless Chromium (Debian's ``chromium``, installed by ``scripts/setup-tests``) is
driven by Playwright through ``executable_path``; the page is served by the real
server (:func:`headwater.ui.create_app`) on 127.0.0.1 over a folder with a
``sample`` connection writing a temp Delta folder, its SQLite store, and one file
that does not validate.  Syncs run in this process on the shared Spark session.

The walk: the connections list, the invalid file's problems, the connection, "Sync now",
the run seen ``running`` and then ``succeeded`` without a reload, the run's figures,
Replay and its result followed live on the replay's page, the backfill's plan and then
the backfill run from the form to its end, a reset confirmed by typing the stream's
name, Stop pressed while the next sync runs (it ends ``stopped`` live) and Sync now
resuming it to ``succeeded``, a failed sync's error, "Older runs" paging back through a
history longer than a page, a late connection marked late, the list searched, filtered
and ordered (kept across a reload), ``/metrics`` beside the invalid
file, an unknown run and connection (one error page), the same pages on a phone-sized
screen, and a run of ``headwater sync`` (in this process, as the CLI runs it) whose page shows
its per-checkpoint log lines. A sync is held
after its first checkpoint's release (a listener on the driver's ``after-release``
moment waits on a gate the test opens) so the page is seen running whatever the
machine's speed; nothing is timed. Each step saves a screenshot under
``test-artifacts/ui/`` (kept by CI) and checks what it shows through the DOM.
Throughout: no console error, no request to any host but the server, and the
connection's secret in no page.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml

from headwater import _events
from tests.integration._connections import connection_file
from tests.integration._in_process import run_in_process

pytestmark = pytest.mark.spark

CHROMIUM = os.environ.get("HEADWATER_CHROMIUM") or shutil.which("chromium")
#: Where the screenshots go; the README's test section names it (CI keeps it as artifacts).
ARTIFACTS = Path(__file__).resolve().parents[3] / "test-artifacts" / "ui"
SECRET = "sk-page-test-2f9c1e"
#: Long enough for a sync on a loaded 2-core machine; the waits end as soon as the DOM shows it.
SLOW_MS = 600_000

# Missing, the test fails (as for the suite's other servers): a skip would let CI pass
# without the page ever opening in a browser.
if CHROMIUM is None:
    raise RuntimeError("chromium is not installed: scripts/setup-tests installs Debian's "
                       "chromium (or name one with HEADWATER_CHROMIUM)")
import playwright.sync_api as playwright_api  # noqa: E402  (after the check that explains)

expect = playwright_api.expect


class Gate:
    """Holds every sync of this process after a checkpoint's release while closed.

    Registered on the driver's moments (:mod:`headwater._events`): the sync's
    thread waits at ``after-release``, after that checkpoint's rows and state are
    committed, so the page can show a run that is running, with its first figures.
    """

    def __init__(self) -> None:
        self._open = threading.Event()

    def __call__(self, moment: str) -> None:
        if moment == "after-release":
            self._open.wait(timeout=SLOW_MS / 1000)

    def close(self) -> None:
        self._open.clear()

    def open(self) -> None:
        self._open.set()


@pytest.fixture(autouse=True)
def _no_secret_of_an_earlier_test() -> Iterator[None]:
    """The page's syncs run in its server's threads, not as a command of their own, so no
    command clears the process-wide masker for them: a PostgreSQL password ``headwater``
    an earlier test of the process registered masked the page's logger names
    (``**********.engine._sync``).  Before the server is built, so its own stay."""
    from headwater.config import _secrets

    _secrets._registry.clear()
    yield


@pytest.fixture
def gate() -> Iterator[Gate]:
    gate = Gate()
    gate.open()
    _events.listen(gate)
    yield gate
    gate.open()
    _events.clear()


def write_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "connections"
    folder.mkdir()
    connection_file(folder, name="shop", lake=str(tmp_path / "lake"),
                    source={"users": 300, "orders": 0, "rows_per_partition": 100,
                            "api_key": SECRET},
                    streams=[{"name": "users", "sync_mode": "incremental",
                              "destination_sync_mode": "append_dedup",
                              "primary_key": ["id"]}],
                    checkpoint={"partitions_per_checkpoint": 1, "concurrent_checkpoints": 1})
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the lake should be")
    connection_file(folder, name="stuck", lake=str(blocker / "lake"),
                    source={"users": 100, "orders": 0, "rows_per_partition": 100},
                    streams=[{"name": "users", "sync_mode": "incremental"}])
    (folder / "broken.yaml").write_text(yaml.safe_dump({
        "name": "broken",
        "source": {"type": "sample", "config": {"users": "many"}},
        "destination": {"type": "delta", "config": {"path": str(tmp_path / "lake2")}},
        "streams": [{"name": "users", "sync_mode": "sometimes"}],
    }))
    return folder


def seed_runs(store_file: Path, connection: str, count: int) -> None:
    """Record ``count`` finished runs of ``connection`` (cheap: no Spark), as a sync
    records its own: created ``running`` with a plan, then finished with its figures."""
    from headwater.metadata_store import MetadataStore

    store = MetadataStore(f"sqlite:///{store_file}")
    try:
        for number in range(count):
            run_id = store.create_run(connection, plan={"streams": []}, state_before={},
                                      config_redacted={})
            store.finish_run(run_id, status="succeeded", state_after={}, error=None,
                             stats={"streams": [{"name": "users", "status": "succeeded",
                                                 "records_written": number,
                                                 "records_rejected": 0, "bytes": 0}]})
    finally:
        store.close()


@pytest.fixture
def server(spark: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> Iterator[Any]:
    """The real server on 127.0.0.1, any free port, from its own thread.

    Headwater logs at INFO, as under ``headwater ui``, so runs have log lines to show.
    """
    caplog.set_level(logging.INFO, logger="headwater")
    from headwater.ui import UiServer, create_app

    folder = write_folder(tmp_path)
    late_connection(folder, tmp_path / "connections" / "meta.db")
    server = UiServer(create_app(folder), "127.0.0.1", 0)
    server.start()
    yield server
    server.shutdown("the test is over")


FAILED_READ = ("ConnectorError: reading partition failed: HTTPError: 500 "
               "(stream=users, partition=users:w2)")


def seed_failed_read(store_file: Path) -> str:
    """A failed run of ``stuck`` as the engine records a read that failed on one partition
    of a three-partition checkpoint (the error names it), a second checkpoint never started."""
    from headwater.metadata_store import MetadataStore

    checkpoints = [{"index": 1, "checkpoint_id": "stuck-users-1", "lane": 0,
                    "partitions": [{"id": f"users:w{n}"} for n in (1, 2, 3)]},
                   {"index": 2, "checkpoint_id": "stuck-users-2", "lane": 0,
                    "partitions": [{"id": "users:w4"}]}]
    plan = {"connection": "stuck", "streams": [{
        "stream": {"name": "users", "sync_mode": "incremental",
                   "destination_sync_mode": "append"},
        "state_before": None, "lanes": 1, "checkpoints": checkpoints}]}
    store = MetadataStore(f"sqlite:///{store_file}")
    try:
        run_id = store.create_run("stuck", plan=plan, state_before={}, config_redacted={})
        store.start_attempt(run_id, pid=1, host="h")
        store.record_checkpoint(run_id, "users", 1, "stuck-users-1", status="failed",
                                stats={"attempt": 1, "error": FAILED_READ})
        store.finish_run(run_id, status="failed", error=f"users: {FAILED_READ}",
                         state_after={}, stats={"streams": [{
                             "name": "users", "status": "failed", "records_written": 0,
                             "records_rejected": 0, "bytes": 0, "error": FAILED_READ}]})
    finally:
        store.close()
    return run_id


def late_connection(folder: Path, store_file: Path) -> None:
    """``nightly``: a 15-minute schedule whose one (succeeded) run started in 2025: late."""
    import sqlite3

    connection_file(folder, name="nightly", lake=str(folder.parent / "lake3"),
                    source={"users": 10, "orders": 0},
                    streams=[{"name": "users", "sync_mode": "incremental"}],
                    schedule="*/15 * * * *")
    seed_runs(store_file, "nightly", 1)
    with sqlite3.connect(store_file) as db:
        db.execute("UPDATE runs SET started_at = '2025-01-01 00:00:00.000000', "
                   "ended_at = '2025-01-01 00:00:05.000000' WHERE connection = 'nightly'")


def metrics_samples(page: Any, base: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """``/metrics`` as Prometheus reads it (prometheus_client's own parser)."""
    from prometheus_client.parser import text_string_to_metric_families

    response = page.request.get(base + "/metrics")
    assert response.ok
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(response.text())
            for sample in family.samples}


class Walk:
    """A browser page on the server, and what it must never do."""

    def __init__(self, browser: Any, base: str, viewport: dict[str, int]) -> None:
        self.base = base
        self.context = browser.new_context(viewport=viewport, locale="en-US", timezone_id="UTC")
        self.page = self.context.new_page()
        self.page.set_default_timeout(60_000)
        self.problems: list[str] = []
        host = urlsplit(base).netloc
        self.page.on("console", lambda m: m.type == "error" and self.problems.append(
            f"console error: {m.text}"))
        self.page.on("pageerror", lambda e: self.problems.append(f"page error: {e}"))
        self.page.on("request", lambda r: urlsplit(r.url).netloc != host and self.problems
                     .append(f"request to another host: {r.url}"))

    def shot(self, name: str) -> None:
        """Save a screenshot, and check that the page holds no secret."""
        self.page.screenshot(path=ARTIFACTS / f"{name}.png", full_page=True)
        assert SECRET not in self.page.content()

    def close(self) -> None:
        self.context.close()
        assert self.problems == []


@pytest.fixture
def browser() -> Iterator[Any]:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with playwright_api.sync_playwright() as playwright:
        # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield browser
        browser.close()


def test_a_person_syncs_watches_and_replays_in_the_page(
        server: Any, browser: Any, gate: Gate, tmp_path: Path) -> None:
    from headwater.ui._app import ACTIONS

    base = server.url
    walk = Walk(browser, base, {"width": 1280, "height": 900})
    page = walk.page

    # The connections list: the valid connection, never run, and the file with problems.
    page.goto(base + "/")
    row = page.get_by_test_id("connections-table-row").filter(has_text="shop")
    expect(row.get_by_test_id("last-run-status")).to_have_text("never run")
    expect(row).to_contain_text("sample → delta")
    invalid = page.get_by_test_id("invalid-connection")
    expect(invalid).to_contain_text("broken")
    # A 15-minute schedule last run in 2025 is not a green "succeeded" alone: it is late.
    nightly = page.get_by_test_id("connections-table-row").filter(has_text="nightly")
    expect(nightly.get_by_test_id("last-run-status")).to_have_text("succeeded")
    expect(nightly.get_by_test_id("late")).to_contain_text(re.compile(r"late \d+ d"))
    walk.shot("01-connections")

    # The invalid file's entry opens on its problems, as `headwater validate` words them.
    invalid.locator("summary").click()
    problems = invalid.get_by_test_id("problems").locator("li")
    expect(problems.first).to_be_visible()
    assert any("sync_mode" in text and "sometimes" in text
               for text in problems.all_inner_texts()), problems.all_inner_texts()
    walk.shot("02-invalid-file")

    # The connection: its stream and state, no run yet.
    row.get_by_test_id("connection-link").click()
    expect(page.get_by_test_id("connection-name")).to_have_text("shop")
    streams = page.get_by_test_id("streams-table-row")
    expect(streams).to_have_count(1)
    expect(streams.first).to_contain_text("users")
    expect(page.get_by_test_id("runs-table-empty")).to_be_visible()
    walk.shot("03-connection")

    # Sync now: the run appears running (held at its first release), then succeeds,
    # while the page is never reloaded (a mark set on the window survives).
    page.evaluate("window.__notReloaded = true")
    gate.close()
    page.get_by_test_id("sync-now").click()
    first = page.get_by_test_id("runs-table-row").first
    expect(first.get_by_test_id("run-status")).to_have_text("running", timeout=SLOW_MS)
    expect(page.get_by_test_id("sync-now")).to_be_disabled()
    walk.shot("04-sync-running")
    gate.open()
    expect(first.get_by_test_id("run-status")).to_have_text("succeeded", timeout=SLOW_MS)
    assert page.evaluate("window.__notReloaded") is True
    expect(first.locator("[data-col=records]")).to_have_text("300")
    expect(page.get_by_test_id("connection-status")).to_have_text("succeeded")
    expect(page.get_by_test_id("stream-state")).to_contain_text("up to 2024-01-01")
    expect(page.get_by_test_id("streams-table-row").first).to_contain_text("updated_at")
    expect(page.get_by_test_id("throughput-chart")).to_have_attribute("data-points", "1")
    # The runs table shows the run's bytes; a chart has a labelled axis and says its values.
    assert first.locator("[data-col=bytes]").inner_text().endswith(("B", "KB", "MB"))
    expect(page.get_by_test_id("throughput-chart-axis")).to_contain_text("0")
    expect(page.get_by_test_id("duration-chart-values")).to_contain_text(
        re.compile(r"latest \S+ .*highest"))
    walk.shot("05-sync-succeeded")
    # At 1440 px the streams table fits: Freshness and Table are not cut off at its edge.
    page.set_viewport_size({"width": 1440, "height": 900})
    wrap = page.get_by_test_id("streams-table").locator("xpath=..")
    assert wrap.evaluate("w => w.scrollWidth <= w.clientWidth"), "the streams table is clipped"
    walk.shot("05b-streams-1440")
    page.set_viewport_size({"width": 1280, "height": 900})
    # /metrics beside the invalid file: the valid connections' samples are all there.
    samples = metrics_samples(page, base)
    assert samples["headwater_metadata_store_up", ()] == 1
    assert samples["headwater_records_written_total",
                   (("connection", "shop"), ("stream", "users"))] == 300
    assert samples["headwater_connection_config_valid", (("connection", "broken"),)] == 0
    assert samples["headwater_connection_late", (("connection", "nightly"),)] == 1

    # The run: its figures, checkpoints with their commits, state after, log lines.
    run_id = first.get_by_test_id("run-link").inner_text()
    first.get_by_test_id("run-link").click()
    expect(page.get_by_test_id("run-id")).to_have_text(run_id)
    expect(page.get_by_test_id("run-status")).to_have_text("succeeded")
    expect(page.get_by_test_id("progress-records")).to_have_text("300")
    expect(page.get_by_test_id("progress-partitions")).to_have_text("3 / 3")
    detail = page.get_by_test_id("stream-detail").filter(has_text="users")
    detail.locator("summary").click()
    checkpoints = detail.get_by_test_id("checkpoints-table-row")
    expect(checkpoints).to_have_count(3)
    commits = detail.get_by_test_id("commit-id").all_inner_texts()
    assert all(text != "—" for text in commits), commits
    expect(detail.get_by_test_id("partitions-table-row")).to_have_count(3)
    expect(page.get_by_test_id("state-after")).to_contain_text("users")
    expect(page.get_by_test_id("log-line").first).to_be_visible()
    expect(page.get_by_test_id("log-line").first).to_contain_text("headwater.engine._sync")
    # Where its time went, as `headwater sync --json` says it (the page's sync is the CLI's).
    page.get_by_test_id("run-steps").locator("summary").click()
    expect(page.get_by_test_id("steps-table-row").filter(has_text="spark_session")
           ).to_have_count(1)
    expect(page.get_by_test_id("steps-table-row").filter(has_text="early_reads")
           ).to_have_count(1)
    walk.shot("06-run")

    # Replay: the page follows the new run live, then reads its result.  The server is
    # told not to wait for the replay's run id (as when Spark is slow to start), so the
    # page finds the new run itself.
    server.app[ACTIONS].wait_for_run_s = 0
    gate.close()
    page.get_by_test_id("replay").click()
    expect(page.get_by_test_id("run-id")).not_to_have_text(run_id)
    expect(page.get_by_test_id("replay-of")).to_contain_text(run_id)
    expect(page.get_by_test_id("run-status")).to_have_text("running", timeout=SLOW_MS)
    expect(page.get_by_test_id("stop")).to_be_visible()
    expect(page.get_by_test_id("progress-records")).not_to_have_text("0", timeout=SLOW_MS)
    expect(page.get_by_test_id("run-status")).to_have_text("running")
    walk.shot("07-replay-running")
    gate.open()
    expect(page.get_by_test_id("run-status")).to_have_text("succeeded", timeout=SLOW_MS)
    expect(page.get_by_test_id("run-kind")).to_have_text("replay")
    expect(page.get_by_test_id("progress-records")).to_have_text("300")
    expect(page.get_by_test_id("replay")).to_be_visible()
    walk.shot("08-replay-succeeded")

    # Backfill shows its plan first and runs nothing until asked; Run opens the new run,
    # followed live to its end.
    page.get_by_role("link", name="shop", exact=True).click()
    page.get_by_test_id("backfill-open").click()
    dialog = page.get_by_test_id("backfill-dialog")
    dialog.get_by_test_id("backfill-from").fill("2024-01-01T00:00:00Z")
    dialog.get_by_test_id("backfill-to").fill("2024-01-01T00:02:00Z")
    expect(dialog.get_by_test_id("backfill-run")).to_be_disabled()
    dialog.get_by_test_id("backfill-show-plan").click()
    plan_row = dialog.get_by_test_id("plan-table-row")
    expect(plan_row).to_have_count(1)
    expect(plan_row).to_contain_text("users")
    expect(dialog.get_by_test_id("backfill-run")).to_be_enabled()
    planned = plan_row.locator("[data-col=partitions]").inner_text()
    expect(dialog.get_by_test_id("plan-partition")).to_have_count(int(planned))
    expect(dialog.get_by_test_id("plan-partition").first).to_contain_text("users:2024-01-01")
    walk.shot("09-backfill-plan")
    dialog.get_by_test_id("backfill-run").click()
    expect(page.get_by_test_id("run-kind")).to_have_text("backfill", timeout=SLOW_MS)
    expect(page.get_by_test_id("run-status")).to_have_text("succeeded", timeout=SLOW_MS)
    expect(page.get_by_test_id("progress-partitions")).to_have_text(f"{planned} / {planned}")
    expect(page.get_by_test_id("progress-records")).not_to_have_text("0")
    walk.shot("10-backfill-succeeded")
    page.get_by_role("link", name="shop", exact=True).click()
    expect(page.get_by_test_id("runs-table-row")).to_have_count(3)
    expect(page.get_by_test_id("runs-table-row").first.locator("[data-col=kind]")
           ).to_have_text("backfill")

    # Reset says what it does and waits for the stream's name to be typed.
    page.get_by_test_id("reset-open").click()
    dialog = page.get_by_test_id("reset-dialog")
    expect(dialog).to_contain_text("reads this stream from the start")
    expect(dialog.get_by_test_id("reset-run")).to_be_disabled()
    dialog.get_by_test_id("reset-confirm").fill("user")
    expect(dialog.get_by_test_id("reset-run")).to_be_disabled()
    dialog.get_by_test_id("reset-confirm").fill("users")
    walk.shot("11-reset-confirm")
    dialog.get_by_test_id("reset-run").click()
    expect(page.get_by_test_id("stream-state")).to_contain_text("no state yet")

    # Stop, as Ctrl-C: the sync that reads the stream again, held after its first of three
    # checkpoints, ends after that commit, `stopped`, shown live (the page is not reloaded).
    gate.close()
    page.get_by_test_id("sync-now").click()
    first = page.get_by_test_id("runs-table-row").first
    expect(first.get_by_test_id("run-status")).to_have_text("running", timeout=SLOW_MS)
    first.get_by_test_id("run-link").click()
    expect(page.get_by_test_id("progress-partitions")).to_have_text("1 / 3", timeout=SLOW_MS)
    # What the connection's view said (the reset, the sync started) stayed there.
    expect(page.get_by_test_id("notice-info")).to_have_count(0)
    stopped_id = page.get_by_test_id("run-id").inner_text()
    page.get_by_test_id("stop").click()
    stopping = page.get_by_test_id("notice-info").filter(has_text="Stopping")
    expect(stopping).to_be_visible()
    expect(stopping).to_have_attribute("data-about", stopped_id)  # about this run
    gate.open()
    expect(page.get_by_test_id("run-status")).to_have_text("stopped", timeout=SLOW_MS)
    # Said and done: it goes as the page sees its run end (not on a timer, which let it
    # stay after the run, across views).
    expect(stopping).to_have_count(0, timeout=500)
    expect(page.get_by_test_id("stop")).to_have_count(0)
    expect(page.get_by_test_id("replay")).to_have_count(0)  # refused until it is finished
    expect(page.get_by_test_id("progress-partitions")).to_have_text("1 / 3")
    expect(page.get_by_test_id("progress-records")).to_have_text("100")
    expect(page.get_by_test_id("run-stopped")).to_contain_text("resumes it")
    expect(page.get_by_test_id("errors-table")).to_have_count(0)
    assert page.evaluate("window.__notReloaded") is True
    walk.shot("12-sync-stopped")

    # The next Sync now resumes it (the same run, a second attempt) to its end, then syncs
    # what is new in a run of its own (nothing here).
    page.get_by_test_id("run-stopped").get_by_role("link", name="shop").click()
    stopped_row = page.get_by_test_id("runs-table-row").filter(has_text=stopped_id)
    expect(stopped_row.get_by_test_id("run-status")).to_have_text("stopped")
    page.get_by_test_id("sync-now").click()
    expect(stopped_row.get_by_test_id("run-status")).to_have_text("succeeded", timeout=SLOW_MS)
    expect(page.get_by_test_id("runs-table-row")).to_have_count(5, timeout=SLOW_MS)
    expect(page.get_by_test_id("sync-now")).to_be_enabled(timeout=SLOW_MS)
    # "Sync of shop started." went as the connection went idle.
    expect(page.get_by_test_id("notice-info").filter(has_text="Sync of shop started")
           ).to_have_count(0, timeout=500)
    expect(page.get_by_test_id("stream-state")).to_contain_text("up to 2024-01-01 00:05")
    stopped_row.get_by_test_id("run-link").click()
    expect(page.get_by_test_id("run-id")).to_have_text(stopped_id)
    expect(page.get_by_test_id("run-status")).to_have_text("succeeded")
    expect(page.get_by_test_id("progress-records")).to_have_text("300")
    expect(page.get_by_test_id("progress-partitions")).to_have_text("3 / 3")
    expect(page.get_by_test_id("attempts-table-row")).to_have_count(2)
    expect(page.get_by_test_id("run-stopped")).to_have_count(0)
    # Its log lines: the stopped attempt's checkpoint, then the resuming attempt's two.
    expect(page.get_by_test_id("log-line").filter(has_text=re.compile(
        r"checkpoint \d+: 100 rows"))).to_have_count(3)
    walk.shot("13-sync-resumed")

    # A sync that fails (its lake is under a file): the page says so, and why.
    page.get_by_role("link", name="Connections", exact=True).first.click()
    expect(row.get_by_test_id("last-run-status")).to_have_text("succeeded")
    expect(row.get_by_test_id("records-chart")).to_have_attribute("data-points", "5")
    # The last run listed is the resumed one, which wrote the rows, not its empty follow-up.
    expect(row.locator("[data-col=records]")).to_have_text("300")
    assert row.locator("[data-col=bytes]").inner_text().endswith(("B", "KB", "MB"))
    assert row.locator("[data-col=rows_per_s]").inner_text() != "—"
    walk.shot("14-connections-after")
    # Narrowed and ordered as a person on call does: the latest run first, the late ones, a
    # name; the choice is in the address, so a reload (or a link) keeps it.
    links = page.get_by_test_id("connections-table-row").get_by_test_id("connection-link")
    page.get_by_test_id("connections-sort").select_option("recent")
    expect(links).to_have_text(["shop", "nightly", "stuck"])
    page.get_by_test_id("connections-status").select_option("late")
    expect(links).to_have_text(["nightly"])
    expect(page.get_by_test_id("connections-shown")).to_have_text("1 of 3 shown")
    page.get_by_test_id("connections-status").select_option("all")
    page.get_by_test_id("connections-search").fill("ST")
    expect(links).to_have_text(["stuck"])
    walk.shot("14b-connections-searched")
    page.reload()
    expect(links).to_have_text(["stuck"])
    expect(page.get_by_test_id("connections-search")).to_have_value("ST")
    page.get_by_test_id("connections-search").fill("")
    expect(links).to_have_text(["shop", "nightly", "stuck"])
    page.get_by_test_id("connections-sort").select_option("name")
    expect(links).to_have_text(["nightly", "shop", "stuck"])
    page.get_by_test_id("connection-link").filter(has_text="stuck").click()
    page.get_by_test_id("sync-now").click()
    failed = page.get_by_test_id("runs-table-row").first
    expect(failed.get_by_test_id("run-status")).to_have_text("failed", timeout=SLOW_MS)
    failed.get_by_test_id("run-link").click()
    expect(page.get_by_test_id("run-status")).to_have_text("failed")
    expect(page.get_by_test_id("run-error")).to_contain_text("not-a-folder")
    expect(page.get_by_test_id("errors-table-row")).to_have_count(1)  # said once
    # The run is over: its partition says what became of it, not "No partition finished yet".
    page.get_by_test_id("stream-detail").locator("summary").click()
    expect(page.get_by_test_id("partitions-table-empty")).to_have_count(0)
    expect(page.get_by_test_id("partition-status").first).to_have_text("not started")
    expect(page.get_by_test_id("partition-outcome").first).to_contain_text(
        "not started: the stream failed before it")
    walk.shot("15-failed-run")

    # "Older runs" pages back through a history longer than a page (runs recorded through
    # the store's API, as a sync records them: newer than the failed one).
    seed_runs(tmp_path / "connections" / "meta.db", "stuck", 55)
    page.get_by_role("link", name="stuck", exact=True).click()
    runs = page.get_by_test_id("runs-table-row")
    expect(runs).to_have_count(50)
    expect(page.get_by_test_id("older-runs")).to_be_visible()
    page.get_by_test_id("older-runs").click()
    expect(runs).to_have_count(56)
    expect(page.get_by_test_id("older-runs")).to_have_count(0)
    expect(runs.last.get_by_test_id("run-status")).to_have_text("failed")
    ids = runs.get_by_test_id("run-link").all_inner_texts()
    assert len(set(ids)) == 56, "a run is listed twice"
    walk.shot("16-older-runs")

    # A run whose read failed on one partition of three (recorded as the engine records
    # it): the error is on that partition, once; its neighbours were cancelled; the next
    # checkpoint was never started, and each says so.
    page.goto(f"{base}/#/runs/{seed_failed_read(tmp_path / 'connections' / 'meta.db')}")
    expect(page.get_by_test_id("run-status")).to_have_text("failed")
    errors = page.get_by_test_id("errors-table-row")
    expect(errors).to_have_count(1)
    expect(errors).to_contain_text("users:w2")
    page.get_by_test_id("stream-detail").locator("summary").click()
    expect(page.get_by_test_id("partition-status")).to_have_text(
        ["cancelled", "failed", "cancelled", "not started"])
    expect(page.get_by_test_id("partition-outcome")).to_have_text([
        "cancelled: partition users:w2 of its checkpoint failed", FAILED_READ,
        "cancelled: partition users:w2 of its checkpoint failed",
        "not started: the stream stopped when checkpoint 1 failed"])
    walk.shot("16a-failed-partition")

    # An unknown run or connection: one error page, no notice (it used to repeat every 5 s).
    for address, words in (("#/runs/does-not-exist", "no run 'does-not-exist'"),
                           ("#/connections/nope", "no connection 'nope'")):
        page.goto(f"{base}/{address}")
        expect(page.get_by_test_id("page-error")).to_contain_text(words)
        expect(page.get_by_test_id("log-lines")).to_have_count(0)
        expect(page.get_by_test_id("notice-error")).to_have_count(0)
    walk.shot("16b-unknown-run")
    # The browser reports each 404 on its console: the ones expected here.
    walk.problems = [p for p in walk.problems if "404" not in p]
    walk.close()

    # A phone-sized screen: nothing wider than the screen but the tables, which scroll.
    phone = Walk(browser, base, {"width": 390, "height": 844})
    phone.page.goto(base + "/#/connections/shop")
    expect(phone.page.get_by_test_id("runs-table-row")).to_have_count(5)
    assert phone.page.evaluate(
        "document.documentElement.scrollWidth <= window.innerWidth"), "the page is too wide"
    assert phone.page.evaluate(
        "[...document.querySelectorAll('.table-wrap')].some(w => w.scrollWidth > w.clientWidth)")
    phone.shot("17-phone-connection")
    phone.page.get_by_test_id("run-link").first.click()
    expect(phone.page.get_by_test_id("run-status")).to_have_text("succeeded")
    assert phone.page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    phone.shot("18-phone-run")
    phone.close()

    # A run of `headwater sync` (no -v: its console shows warnings only) keeps the same
    # per-checkpoint lines as the page's runs, and the late connection is late no more.
    # Last in the walk: the in-process CLI clears the process's listeners and secrets.
    logging.getLogger("headwater").setLevel(logging.NOTSET)  # as in a real process
    done = run_in_process(tmp_path, "sync", str(tmp_path / "connections" / "nightly.yaml"))
    assert done.exit_code == 0, done.stderr
    cli = Walk(browser, base, {"width": 1280, "height": 900})
    cli.page.goto(base + "/")
    nightly = cli.page.get_by_test_id("connections-table-row").filter(has_text="nightly")
    expect(nightly.get_by_test_id("late")).to_have_count(0)
    nightly.get_by_test_id("connection-link").click()
    # Each click waits for its page: the list's own run links (and a slow page, CI saw
    # the connection page still shown 5 s after a click) are not the ones meant.
    expect(cli.page).to_have_url(re.compile(r"#/connections/nightly$"), timeout=SLOW_MS)
    expect(cli.page.get_by_test_id("runs-table-row").first).to_be_visible(timeout=SLOW_MS)
    cli.page.get_by_test_id("run-link").first.click()
    expect(cli.page.get_by_test_id("run-id")).to_be_visible(timeout=SLOW_MS)
    expect(cli.page.get_by_test_id("run-status")).to_have_text("succeeded")
    expect(cli.page.get_by_test_id("log-line").filter(has_text=re.compile(
        r"checkpoint \d+: 10 rows"))).to_have_count(1)
    expect(cli.page.get_by_test_id("log-download")).to_be_visible()
    cli.shot("20-cli-run-logs")
    cli.close()


TOKEN = "page-token-7c41d2"


@pytest.fixture
def token_server(tmp_path: Path) -> Iterator[str]:
    """The server with a token, as beyond loopback (here still on 127.0.0.1); no sync runs."""
    from headwater.ui import UiServer, create_app

    server = UiServer(create_app(write_folder(tmp_path), token=TOKEN), "127.0.0.1", 0)
    server.start()
    yield server.url
    server.shutdown("the test is over")


def test_the_page_asks_for_the_token_once_and_takes_it_from_the_address(
        token_server: str, browser: Any) -> None:
    walk = Walk(browser, token_server, {"width": 1280, "height": 900})
    page = walk.page
    # A first load without it: the server's 401 (which the browser reports on its console,
    # the one error expected here) makes the page ask; the answer is kept for the tab.
    page.goto(token_server + "/")
    dialog = page.get_by_test_id("token-dialog")
    expect(dialog).to_be_visible()
    dialog.get_by_test_id("token-input").fill(TOKEN)
    walk.shot("19-token-asked")
    dialog.get_by_test_id("token-submit").click()
    expect(page.get_by_test_id("connection-link")).to_have_text(["shop", "stuck"])
    assert page.evaluate("sessionStorage.getItem('headwater.token')") == TOKEN
    page.reload()
    expect(page.get_by_test_id("connection-link")).to_have_text(["shop", "stuck"])
    expect(dialog).to_be_hidden()
    walk.problems = [p for p in walk.problems if "401" not in p]
    walk.close()

    # ?token= on the first load: used, kept, and removed from the address bar.
    walk = Walk(browser, token_server, {"width": 1280, "height": 900})
    walk.page.goto(f"{token_server}/?token={TOKEN}#/connections/shop")
    expect(walk.page.get_by_test_id("connection-name")).to_have_text("shop")
    assert TOKEN not in walk.page.url
    assert walk.page.url.endswith("#/connections/shop")
    walk.close()
