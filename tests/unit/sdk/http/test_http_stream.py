"""HttpStream planning and reading: partition sizes and task counts, window filters on
epoch values, one session per stream object."""

from __future__ import annotations

import pickle
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa
import pytest

from headwater.errors import StateError
from headwater.sdk import PlanContext
from headwater.sdk.http import (
    BearerAuth,
    HttpSettings,
    HttpStream,
    HttpStreamSpec,
    NextUrlPaginator,
)
from headwater.sdk.http._stream import _Window, default_windows_per_partition
from tests.api_server import BASE_EPOCH, TOKEN, ApiServer, iso

SCHEMA = {"type": "object", "properties": {"id": {"type": "integer"},
                                           "title": {"type": "string"},
                                           "date_modified": {"type": "integer"}}}


def surveys(url: str, fmt: str = "epoch", concurrency: int = 2, **changes: Any) -> HttpStream:
    fields: dict[str, Any] = {"end_date": iso(BASE_EPOCH + 4 * 86_400),
                              "windows_per_partition": 2, **changes}
    spec = HttpStreamSpec(
        name="surveys", path="/v3/surveys", json_schema=SCHEMA,
        params={"start_modified_at": "{start}", "end_modified_at": "{end}", "per_page": 5},
        record_path="data", primary_key=("id",), paginator=NextUrlPaginator("links.next"),
        cursor_field="date_modified", cursor_format=fmt,  # type: ignore[arg-type]
        start_date=iso(BASE_EPOCH), window_size_s=86_400, **fields)
    return HttpStream(spec, HttpSettings(base_url=url, auth=BearerAuth(TOKEN),
                                         concurrency=concurrency))


@pytest.mark.parametrize("fmt", ["epoch", "iso"])
def test_epoch_values_are_filtered_as_the_converter_compares_them(fmt: str) -> None:
    stream = surveys("http://127.0.0.1:9", fmt)
    assert stream.state_converter is not None
    low = datetime(2024, 1, 1, tzinfo=UTC)
    window = _Window.of(low, low + timedelta(seconds=10, microseconds=500))
    edge = int(low.timestamp())
    values: list[Any] = [edge - 1, edge, edge + 10, edge + 11, -62_135_596_801, 10**12,
                         253_402_300_800, True, float(edge), "2024-01-01T00:00:05Z"]
    for value in values:
        try:
            parsed = stream.state_converter.parse_record_value(value)
            expected = window.low <= parsed < window.high
        except StateError:
            expected = True  # a value that is no date-time is kept, as before
        assert stream._in_window({"date_modified": value}, window) is expected, value


def test_partitions_of_one_stream_reuse_its_connections(api: ApiServer) -> None:
    # One request in flight: how many connections two windows in flight open depends
    # on timing (under load they may run one after the other), one does not.
    stream = surveys(api.url, concurrency=1)
    plan = stream.plan(None, PlanContext())
    assert len(plan) == 2
    first = [r for item in stream.read(plan[0]) for r in _rows(item)]
    opened = api.connections
    second = [r for item in stream.read(plan[1]) for r in _rows(item)]
    assert api.connections == opened == 1  # the second partition opened none
    expected = sorted(i for i, s in api.data.surveys.items()
                      if s["date_modified"] < BASE_EPOCH + 4 * 86_400)
    assert sorted(r["id"] for r in first + second) == expected

    copy = pickle.loads(pickle.dumps(stream))  # as Spark ships it: without the session
    assert "_sessions" not in copy.__dict__
    assert sorted(r["id"] for p in plan for item in copy.read(p) for r in _rows(item)) == expected
    assert api.connections > opened  # the copy has connections of its own


def test_the_partition_read_next_is_fetched_while_the_current_one_is_read(
        api: ApiServer) -> None:
    alone = surveys(api.url, concurrency=4)
    first, second = alone.plan(None, PlanContext())
    expected = sorted(r["id"] for p in (first, second) for item in alone.read(p)
                      for r in _rows(item))
    api.calls.clear()
    for _ in alone.read(first):
        pass
    calls_first = len(api.calls)
    for _ in alone.read(second):
        pass
    calls_both = len(api.calls)
    assert 0 < calls_first < calls_both

    api.calls.clear()
    stream = surveys(api.url, concurrency=4)
    stream.reads_next(second)  # what the engine says before it reads ``first``
    got = [r for item in stream.read(first) for r in _rows(item)]
    # Nobody has asked for ``second`` yet, but its calls are made (the server logs a
    # call once it has answered it).
    deadline = time.monotonic() + 30
    while len(api.calls) < calls_both:
        assert time.monotonic() < deadline, "the partition read next was never fetched"
        time.sleep(0.02)
    got += [r for item in stream.read(second) for r in _rows(item)]
    assert len(api.calls) == calls_both  # the calls made ahead were used, not made again
    assert sorted(r["id"] for r in got) == expected


def _rows(item: Any) -> list[dict[str, Any]]:
    return item.to_pylist() if isinstance(item, pa.RecordBatch) else [item]


def test_a_partition_holds_four_windows_per_request_its_task_keeps_in_flight() -> None:
    assert default_windows_per_partition(32, 2) == 64  # 16 in flight per task
    assert default_windows_per_partition(10, 2) == 20
    assert default_windows_per_partition(1, 2) == 10  # never fewer than 10
    stream = surveys("http://127.0.0.1:9", concurrency=8, windows_per_partition=None,
                     end_date=iso(BASE_EPOCH + 100 * 86_400))
    plan = stream.plan(None, PlanContext(parallel_tasks=2))
    # 4 in flight per task: 16 one-day windows a partition.
    assert [p.params["end"] - p.params["start"] for p in plan] == [16 * 86_400] * 6 + [4 * 86_400]


def test_no_more_tasks_are_planned_than_requests_in_flight() -> None:
    # Each task keeps at least one request in flight: with concurrency 1, one task
    # reads at a time, so the sync as a whole has one request in flight.
    stream = surveys("http://127.0.0.1:9", concurrency=1)
    assert {p.params["tasks"] for p in stream.plan(None, PlanContext(parallel_tasks=4))} == {1}
    assert stream.max_concurrent_tasks == 1
    wide = surveys("http://127.0.0.1:9", concurrency=16)
    assert {p.params["tasks"] for p in wide.plan(None, PlanContext(parallel_tasks=4))} == {4}
