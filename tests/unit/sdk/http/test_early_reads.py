"""The driver's early reads of a parent and its substream, against the loopback API.

No Spark: :class:`EarlyReads` is what ``headwater sync`` starts on the driver
before the JVM; here it runs alone, and the API's call log (every call in the
order it arrived, and the most answered at once) shows how the calls were made.
Counts and orders only, never timings.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from headwater.connectors.rest._source import RestSource
from headwater.sdk import PlanContext
from headwater.sdk.http._early_reads import EarlyReads
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
    return RestSource({
        "base_url": api.url,
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
    })


def read_early(api: ApiServer, folder: Path, window_s: int,
               per_page: int = PER_PAGE) -> list[str]:
    """Both streams read early into ``folder``, as a first sync does; the paths called."""
    rest = source(api, window_s, per_page)
    states: dict[str, Any] = {"surveys": None, "survey_responses": None}
    context = PlanContext(parallel_tasks=2, planned_at=datetime.now(UTC),
                          synced_states=states, shared_dir=str(folder), reads_early=True)
    early = EarlyReads([rest.stream("surveys"), rest.stream("survey_responses")], context,
                       rest.settings).start()
    assert early.wait(120)
    return [path for _, path, _ in api.calls]


def parent_pages(api: ApiServer, window_s: int) -> int:
    """Calls a read of every window makes to ``/v3/surveys`` (an empty window costs one)."""
    windows = math.ceil(9 * DAY / window_s)
    per_window = [0] * windows
    for survey in api.data.surveys.values():
        per_window[(survey["date_modified"] - BASE_EPOCH) // window_s] += 1
    return sum(max(1, math.ceil(n / PER_PAGE)) for n in per_window)


def test_calls_reach_the_concurrency_and_each_is_made_once(
        api: ApiServer, tmp_path: Path) -> None:
    # Ten one-day windows of about five surveys (three pages each), one call per survey.
    paths = read_early(api, tmp_path, DAY)
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
    """The interval the interpreter hands the GIL over at is short while the driver's
    calls run (the main thread is busy starting Spark meanwhile), and back after."""
    import sys

    from headwater.sdk.http import _early_reads
    from headwater.sdk.http._stream import HttpStream

    seen: list[float] = []
    original = HttpStream.transform

    def noting(self: HttpStream, record: dict[str, Any], values: Any) -> dict[str, Any]:
        seen.append(sys.getswitchinterval())  # on the client's loop, during a call
        return original(self, record, values)

    monkeypatch.setattr(HttpStream, "transform", noting)
    before = sys.getswitchinterval()
    read_early(api, tmp_path, DAY)
    assert seen and max(seen) <= _early_reads.SWITCH_INTERVAL_S < before
    assert sys.getswitchinterval() == before
