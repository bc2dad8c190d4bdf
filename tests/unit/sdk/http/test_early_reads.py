"""The driver's early reads of a parent and its substream, against the loopback API.

No Spark: :class:`EarlyReads` is what ``headwater sync`` starts on the driver
before the JVM; here it runs alone, and the API's call log (every call in the
order it arrived, and the most answered at once) shows how the calls were made.
Counts and orders only, never timings.

The API serves from a thread of this process, so the reads here are a thread
of the driver unless a test asks for their own process (``own_process=True``):
the lifecycle tests do, and one runs a driver in a process of its own, with
only its main thread, to kill it.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from headwater import _events
from headwater._processes import pid_alive
from headwater.connectors.rest._source import RestSource
from headwater.sdk import PlanContext
from headwater.sdk.http._early_reads import EarlyReads
from headwater.sdk.http._shared_pages import DRIVER_DONE, DRIVER_MARK
from tests.api_server import BASE_EPOCH, TOKEN, ApiData, ApiServer, iso, running

SURVEYS = 40  # date_modified every 5 hours from BASE_EPOCH: 200 hours
PER_PAGE = 2
CONCURRENCY = 4
DAY = 86_400


@pytest.fixture
def api() -> Iterator[ApiServer]:
    # Calls take a little while, so several are in flight at once.
    with running(ApiData.sample(surveys=SURVEYS, issues=0), latency_s=0.02) as server:
        yield server


def source(api: ApiServer, window_s: int, per_page: int = PER_PAGE) -> RestSource:
    return RestSource(config(api.url, window_s, per_page))


def config(url: str, window_s: int, per_page: int = PER_PAGE) -> dict[str, Any]:
    return {
        "base_url": url,
        "auth": {"type": "bearer", "token": TOKEN},
        "paginator": {"type": "next_url", "next_url_path": "links.next"},
        "concurrency": CONCURRENCY,
        "streams": [
            {"name": "surveys", "path": "/v3/surveys",
             "params": {"start_modified_at": "{start}", "end_modified_at": "{end}",
                        "per_page": per_page},
             "record_selector": "data", "primary_key": ["id"],
             "cursor_field": "date_modified", "cursor_format": "epoch",
             "start_date": iso(BASE_EPOCH), "end_date": iso(BASE_EPOCH + 9 * DAY),
             "window_size_seconds": window_s,
             "schema": {"type": "object", "properties": {"id": {"type": "integer"}}}},
            {"name": "survey_responses", "path": "/v3/surveys/{parent.id}/responses",
             "params": {"per_page": 50}, "record_selector": "data", "primary_key": ["id"],
             "parent": {"stream": "surveys"},
             "schema": {"type": "object", "properties": {"id": {"type": "integer"}}}},
        ],
    }


NAMES = ("surveys", "survey_responses")


def early_context(folder: Path) -> PlanContext:
    return PlanContext(parallel_tasks=2, planned_at=datetime.now(UTC),
                       synced_states=dict.fromkeys(NAMES), shared_dir=str(folder),
                       reads_early=True)


def start_early(rest: RestSource, context: PlanContext,
                own_process: bool | None = None) -> EarlyReads:
    return EarlyReads([rest.stream(name) for name in NAMES], context, rest.settings,
                      own_process=own_process).start()


def read_early(api: ApiServer, folder: Path, window_s: int, per_page: int = PER_PAGE,
               own_process: bool | None = None) -> list[str]:
    """Both streams read early into ``folder``, as a first sync does; the paths called."""
    early = start_early(source(api, window_s, per_page), early_context(folder), own_process)
    assert early.wait(120)
    return [path for _, path, _ in api.calls]


def parent_pages(api: ApiServer, window_s: int) -> int:
    """Calls a read of every window makes to ``/v3/surveys`` (an empty window costs one)."""
    windows = math.ceil(9 * DAY / window_s)
    per_window = [0] * windows
    for survey in api.data.surveys.values():
        per_window[(survey["date_modified"] - BASE_EPOCH) // window_s] += 1
    return sum(max(1, math.ceil(n / PER_PAGE)) for n in per_window)


@pytest.mark.parametrize("own_process", [False, True], ids=["thread", "process"])
def test_calls_reach_the_concurrency_and_each_is_made_once(
        api: ApiServer, tmp_path: Path, own_process: bool) -> None:
    # Ten one-day windows of about five surveys (three pages each), one call per survey.
    paths = read_early(api, tmp_path, DAY, own_process=own_process)
    assert api.max_in_flight == CONCURRENCY
    assert paths.count("/v3/surveys") == parent_pages(api, DAY)  # the parent read once
    assert sorted(p for p in paths if p != "/v3/surveys") == sorted(
        f"/v3/surveys/{i}/responses" for i in api.data.surveys)
    # Children of the first window are called before the parent's last window is read.
    first_window = {f"/v3/surveys/{i}/responses" for i, s in api.data.surveys.items()
                    if s["date_modified"] < BASE_EPOCH + DAY}
    first_child = min(n for n, p in enumerate(paths) if p in first_window)
    last_parent = max(n for n, p in enumerate(paths) if p == "/v3/surveys")
    assert first_child < last_parent
    # The pages are kept for the tasks: the parent's windows and each window's children.
    assert len(list(tmp_path.glob("*.pages"))) == 2 * math.ceil(9 * DAY / DAY)
    assert not list(tmp_path.glob("*.claim"))


def test_children_of_a_parent_page_start_before_the_next_page_of_its_window(
        api: ApiServer, tmp_path: Path) -> None:
    # One window of ten pages: the children of its first page are called while its
    # later pages are still to come, not once the whole window has been read.  Four
    # children a page, so the calls waiting always fill the concurrency (with two, the
    # parent's page and its two children are three calls, and a fourth in flight
    # depended on timing).
    per_page = CONCURRENCY
    paths = read_early(api, tmp_path, 10 * DAY, per_page)
    assert paths.count("/v3/surveys") == math.ceil(SURVEYS / per_page)
    first_child = min(n for n, p in enumerate(paths) if p != "/v3/surveys")
    last_parent = max(n for n, p in enumerate(paths) if p == "/v3/surveys")
    assert first_child < last_parent
    assert api.max_in_flight == CONCURRENCY


def test_the_loop_gets_the_gil_often_while_the_calls_run(
        api: ApiServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In a thread of the driver (the fallback where a fork is not safe), the interval
    the interpreter hands the GIL over at is short while the calls run (the main
    thread is busy starting Spark meanwhile), and back after."""
    from headwater.sdk.http import _early_reads
    from headwater.sdk.http._stream import HttpStream

    seen: list[float] = []
    original = HttpStream.transform

    def noting(self: HttpStream, record: dict[str, Any], values: Any) -> dict[str, Any]:
        seen.append(sys.getswitchinterval())  # on the client's loop, during a call
        return original(self, record, values)

    monkeypatch.setattr(HttpStream, "transform", noting)
    before = sys.getswitchinterval()
    read_early(api, tmp_path, DAY, own_process=False)
    assert seen and max(seen) <= _early_reads.SWITCH_INTERVAL_S < before
    assert sys.getswitchinterval() == before


# -- the reads in a process of their own: its lifecycle ---------------------------------

#: Quarter-day windows: 36 calls of the substream, each reading one parent window and
#: its children, so the reads are still starting calls when a test interferes.
QUARTER_DAY = DAY // 4


@pytest.fixture
def slow_api() -> Iterator[ApiServer]:
    """Slow enough that a read of every call takes seconds at the concurrency."""
    with running(ApiData.sample(surveys=SURVEYS, issues=0), latency_s=0.2) as server:
        yield server


def reader_pid(folder: Path) -> int:
    return int((folder / DRIVER_MARK).read_text())


def eventually(check: Callable[[], bool], timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def calls_settle(api: ApiServer) -> int:
    """The number of calls once no new one has come for a second (at most 10 s)."""
    seen, since = len(api.calls), time.monotonic()
    while time.monotonic() - since < 1.0:
        time.sleep(0.1)
        if len(api.calls) != seen:
            seen, since = len(api.calls), time.monotonic()
        assert time.monotonic() - since < 10
    return seen


def reaped(pid: int) -> bool:
    """Whether ``pid``, a child of this process, is gone and reaped (no zombie left)."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        return True
    return False


def rows_of(rest: RestSource, context: PlanContext) -> dict[str, Counter[int]]:
    """Every planned partition of both streams read in this process, as tasks would:
    each stream's ids with how often each was read."""
    rows: dict[str, Counter[int]] = {}
    for name in NAMES:
        stream = rest.stream(name)
        rows[name] = Counter(
            row["id"] for partition in stream.plan(None, context)
            for item in stream.read(partition)
            for row in (item.to_pylist() if isinstance(item, pa.RecordBatch) else [item]))
    return rows


def test_the_reads_run_in_a_process_that_names_itself_and_is_reaped(
        api: ApiServer, tmp_path: Path) -> None:
    heard: list[str] = []
    _events.listen(heard.append)
    try:
        early = start_early(source(api, DAY), early_context(tmp_path), own_process=True)
        assert early.process is not None
        reader = reader_pid(tmp_path)
        assert reader == early.process.pid != os.getpid()  # the tasks wait while it lives
        assert early.wait(60)
    finally:
        _events._listeners.remove(heard.append)
    assert reaped(reader)
    assert (tmp_path / DRIVER_DONE).exists()
    # What the reader did reaches the driver: its count of calls, the moments.
    assert early.calls_started == math.ceil(9 * DAY / DAY)
    assert heard == ["early-reads-started", "early-reads-done"]
    assert len(list(tmp_path.glob("*.pages"))) == 2 * math.ceil(9 * DAY / DAY)


def test_stop_stops_the_reader_process(slow_api: ApiServer, tmp_path: Path) -> None:
    early = start_early(source(slow_api, QUARTER_DAY), early_context(tmp_path),
                        own_process=True)
    reader = reader_pid(tmp_path)
    assert eventually(lambda: len(slow_api.calls) >= 4)
    # It keeps the driver's CPU priority (Spark's JVM, started later, goes below).
    assert os.getpriority(os.PRIO_PROCESS, reader) == os.getpriority(os.PRIO_PROCESS, 0)
    early.stop(30)
    assert early.wait(0) and reaped(reader)
    calls = calls_settle(slow_api)
    windows = math.ceil(9 * DAY / QUARTER_DAY)
    # It started no call after the stop: far fewer than the run's windows and surveys.
    assert 0 < early.calls_started < windows
    assert calls < windows + SURVEYS
    assert (tmp_path / DRIVER_DONE).exists()


def test_the_folder_removed_stops_the_reader_process(
        slow_api: ApiServer, tmp_path: Path) -> None:
    folder = tmp_path / "run"
    folder.mkdir()
    early = start_early(source(slow_api, QUARTER_DAY), early_context(folder), own_process=True)
    reader = reader_pid(folder)
    assert eventually(lambda: len(slow_api.calls) >= 4)
    # As `rm -rf` would: the reader claims and drops files in it meanwhile.
    while folder.exists():
        shutil.rmtree(folder, ignore_errors=True)
    assert early.wait(5) and reaped(reader)  # at once, not after the calls under way
    assert calls_settle(slow_api) < math.ceil(9 * DAY / QUARTER_DAY) + SURVEYS
    assert early.calls_started == 0  # it left without a word: nothing it read is usable


def test_a_reader_killed_mid_run_leaves_the_rest_to_the_tasks(
        api: ApiServer, tmp_path: Path) -> None:
    rest = source(api, QUARTER_DAY)
    context = early_context(tmp_path)
    early = start_early(rest, context, own_process=True)
    assert eventually(lambda: len(api.calls) >= 6)
    os.kill(reader_pid(tmp_path), signal.SIGKILL)
    # The "tasks" read in this process, in a thread so a wait for ever fails the test.
    read: dict[str, dict[str, Counter[int]]] = {}
    tasks = threading.Thread(target=lambda: read.update(rows=rows_of(rest, context)),
                             daemon=True)
    tasks.start()
    tasks.join(60)
    assert "rows" in read, "the tasks waited for a reader that was killed"
    assert early.wait(5)
    assert read["rows"] == {"surveys": Counter(list(api.data.surveys)),
                            "survey_responses": Counter(
                                r["id"] for rs in api.data.responses.values() for r in rs)}


DRIVER = """
import json, sys, time
from datetime import UTC, datetime
from headwater.connectors.rest._source import RestSource
from headwater.sdk import PlanContext
from headwater.sdk.http._early_reads import EarlyReads

config, folder = json.loads(sys.argv[1]), sys.argv[2]
rest = RestSource(config)
names = ("surveys", "survey_responses")
context = PlanContext(parallel_tasks=2, planned_at=datetime.now(UTC),
                      synced_states=dict.fromkeys(names), shared_dir=folder, reads_early=True)
early = EarlyReads([rest.stream(n) for n in names], context, rest.settings).start()
print(early.process.pid if early.process else 0, flush=True)
time.sleep(120)
"""


def test_the_reader_process_dies_with_its_driver(slow_api: ApiServer, tmp_path: Path) -> None:
    # A driver as `headwater sync` is one: a process with only its main thread, so the
    # reads fork (not asked for); killed with no chance to clean up.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(Path(__file__).resolve().parents[4]), os.environ.get("PYTHONPATH", "")])}
    with subprocess.Popen([sys.executable, "-c", DRIVER,
                           json.dumps(config(slow_api.url, QUARTER_DAY)), str(tmp_path)],
                          env=env, stdout=subprocess.PIPE, text=True) as driver:
        try:
            assert driver.stdout is not None
            reader = int(driver.stdout.readline())
            assert reader and reader != driver.pid and reader == reader_pid(tmp_path)
            assert eventually(lambda: len(slow_api.calls) >= 4)
            assert pid_alive(reader)
            driver.kill()
            driver.wait()
            assert eventually(lambda: not pid_alive(reader), 5), "the reader outlived the driver"
        finally:
            driver.kill()
    assert calls_settle(slow_api) < math.ceil(9 * DAY / QUARTER_DAY) + SURVEYS
