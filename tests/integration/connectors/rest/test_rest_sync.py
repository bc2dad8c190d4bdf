"""The ``rest`` source end to end: a real API on 127.0.0.1, real Spark, real Delta tables.

The API (tests/api_server.py) authenticates, paginates, rate-limits itself and
injects faults; every test compares the table with what the server holds, by
primary key, and reads the server's call log to check the call budget held.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from headwater.cli.app import app
from headwater.errors import AuthenticationError
from tests.api_server import ApiData, ApiServer, Fault, running
from tests.integration.connectors.rest._rest import (
    END_1,
    END_2,
    LIMIT,
    PERIOD_S,
    assert_budget_held,
    connection,
    state,
    surveys_until,
    sync,
    table_ids,
)

pytestmark = pytest.mark.spark


@pytest.fixture
def api() -> Iterator[ApiServer]:
    with running(ApiData.sample(surveys=40, issues=60), limit=LIMIT, period_s=PERIOD_S) as server:
        yield server


def test_surveys_incremental_with_responses_substream(spark: Any, tmp_path: Path,
                                                      api: ApiServer) -> None:
    # Faults on the way: a 429 with Retry-After, two 500s, one answer slower than the timeout.
    api.faults += [Fault("^/v3/surveys$", status=429, retry_after=0.3),
                   Fault("/responses$", status=500, times=2),
                   Fault("/responses$", status=0, delay_s=3.0)]
    first = sync(connection(tmp_path, api, "surveys.yaml", end=END_1))
    assert first.status == "succeeded", first.to_dict()
    end_1 = 1_704_067_200 + 11 * 86_400
    assert table_ids(spark, tmp_path, "surveys") == surveys_until(api, end_1)
    parents = set(surveys_until(api, end_1))
    responses = Counter(r["id"] for s, rows in api.data.responses.items() for r in rows
                        if s in parents)
    assert table_ids(spark, tmp_path, "survey_responses") == responses
    saved = state(tmp_path / "surveys.yaml", "surveys")
    assert saved["slices"] == [{"start": 1_704_067_200, "end": end_1}]  # epoch state

    # A day passes: one old survey changes, a new one appears, and both are read again.
    api.data.surveys[3]["date_modified"] = end_1 + 3600
    api.data.surveys[99] = {"id": 99, "title": "new", "date_modified": end_1 + 7200}
    api.data.responses[99] = [{"id": 99_000, "survey_id": 99, "answer": "x"}]
    calls_before = len(api.calls)
    second = sync(connection(tmp_path, api, "surveys.yaml", end=END_2))
    assert second.status == "succeeded", second.to_dict()
    surveys = {s.name: s for s in second.streams}["surveys"]
    end_2 = 1_704_067_200 + 19 * 86_400
    changed = [i for i, s in api.data.surveys.items() if end_1 <= s["date_modified"] < end_2]
    assert 3 in changed and 99 in changed
    assert surveys.records_written == len(changed)  # exactly the new window, nothing else
    assert table_ids(spark, tmp_path, "surveys") == surveys_until(api, end_2)  # deduplicated
    assert 99_000 in table_ids(spark, tmp_path, "survey_responses")
    assert len(api.calls) > calls_before
    assert_budget_held(api)


def test_github_link_header_iso_state_and_refused_token(spark: Any, tmp_path: Path,
                                                        api: ApiServer) -> None:
    runner = CliRunner()
    refused = connection(tmp_path, api, "github.yaml", end=END_1, token="wrong-token")
    first = runner.invoke(app, ["sync", str(refused), "--json"])
    assert first.exit_code == AuthenticationError.exit_code, first.output
    assert state(refused, "issues") is None  # a refused first sync leaves no state behind

    path = connection(tmp_path, api, "github.yaml", end=END_1)
    assert sync(path).status == "succeeded"
    expected = Counter(i["id"] for i in api.data.issues.values() if i["updated_at"] < END_1)
    assert table_ids(spark, tmp_path, "issues") == expected
    before = state(path, "issues")
    assert before["slices"] == [{"start": "2024-01-01T00:00:00Z", "end": END_1}]  # ISO state

    wrong = connection(tmp_path, api, "github.yaml", end=END_2, token="wrong-token")
    checked = runner.invoke(app, ["check", str(wrong), "--json"])
    assert checked.exit_code == AuthenticationError.exit_code, checked.output
    synced = runner.invoke(app, ["sync", str(wrong), "--json"])
    assert synced.exit_code == AuthenticationError.exit_code, synced.output
    assert "AuthenticationError" in synced.output and "HTTP 401" in synced.output
    assert "wrong-token" not in synced.output
    assert state(wrong, "issues") == before  # nothing moved
    assert table_ids(spark, tmp_path, "issues") == expected
    assert_budget_held(api)


def test_server_dying_mid_sync_resumes_without_gaps_or_duplicates(
        spark: Any, tmp_path: Path, api: ApiServer) -> None:
    path = connection(tmp_path, api, "surveys.yaml", end=END_2)
    document = yaml.safe_load(path.read_text())
    document["source"]["config"]["streams"] = document["source"]["config"]["streams"][:1]
    document["streams"] = [{"name": "surveys", "sync_mode": "incremental",
                            "destination_sync_mode": "append"}]  # duplicates would show
    path.write_text(yaml.safe_dump(document))
    api.die_after = 12
    failed = sync(path)
    assert failed.status == "failed"
    assert "failed after" in (failed.streams[0].error or "")
    partial = state(path, "surveys")

    restarted = ApiServer(api.data, limit=LIMIT, period_s=PERIOD_S, port=api.port).start()
    try:
        resumed = sync(path)
    finally:
        restarted.stop()
    assert resumed.status == "succeeded", resumed.to_dict()
    everything = surveys_until(api, 1_704_067_200 + 19 * 86_400)
    assert table_ids(spark, tmp_path, "surveys") == everything  # each id exactly once
    assert partial is None or partial["slices"] != state(path, "surveys")["slices"]
    assert state(path, "surveys")["slices"] == [{"start": 1_704_067_200,
                                                 "end": 1_704_067_200 + 19 * 86_400}]


def test_each_spark_task_reads_a_run_of_partitions_with_one_client(
        spark: Any, tmp_path: Path, api: ApiServer) -> None:
    tasks_at_once = int(spark.sparkContext.defaultParallelism)
    # One request in flight per task (the concurrency is split over the tasks).
    path = connection(tmp_path, api, "surveys.yaml", end=END_2, concurrency=tasks_at_once)
    _surveys_one_window_a_partition(path, "overwrite", per_checkpoint=4 * tasks_at_once)
    result = sync(path)
    assert result.status == "succeeded", result.to_dict()
    assert table_ids(spark, tmp_path, "surveys") == surveys_until(api, 1_704_067_200
                                                                  + 19 * 86_400)
    stream = result.streams[0]
    # A task's client keeps its one connection alive across the task's partitions; a
    # Spark task per partition would have opened one per partition.
    assert api.connections <= tasks_at_once * stream.checkpoints < stream.partitions


def test_concurrency_caps_requests_in_flight_below_the_task_slots(
        spark: Any, tmp_path: Path) -> None:
    # Two task slots and two lanes, but `concurrency: 1`: the sync as a whole keeps one
    # request in flight (one task at a time), not one per task.
    assert int(spark.sparkContext.defaultParallelism) >= 2
    with running(ApiData.sample(surveys=40, issues=0), limit=LIMIT, period_s=PERIOD_S,
                 latency_s=0.02) as api:
        path = connection(tmp_path, api, "surveys.yaml", end=END_2, concurrency=1)
        _surveys_one_window_a_partition(path, "append")
        result = sync(path)
        assert result.status == "succeeded", result.to_dict()
        assert result.streams[0].checkpoints >= 2  # lanes that could have run side by side
        assert table_ids(spark, tmp_path, "surveys") == surveys_until(api, 1_704_067_200
                                                                      + 19 * 86_400)
        assert api.max_in_flight == 1


def _surveys_one_window_a_partition(path: Path, destination_sync_mode: str, *,
                                    per_checkpoint: int | None = None) -> None:
    """Only the surveys stream, as a full refresh of many short partitions (one API
    window each)."""
    document = yaml.safe_load(path.read_text())
    if per_checkpoint is not None:
        document["checkpoint"]["partitions_per_checkpoint"] = per_checkpoint
    surveys = document["source"]["config"]["streams"][0]
    surveys["windows_per_partition"] = 1
    document["source"]["config"]["streams"] = [surveys]
    document["streams"] = [{"name": "surveys", "sync_mode": "full_refresh",
                            "destination_sync_mode": destination_sync_mode}]
    path.write_text(yaml.safe_dump(document))
