"""A ``rest`` substream read in the same pass as its parent's pages, end to end.

A substream's partition is a partition of its parent: reading it reads the
parent's pages and starts the children's calls as each page arrives.  Real
Spark, real Delta tables, the real loopback API (tests/api_server.py), whose
call log (every call with its arrival time) shows the order the calls came in.
"""

from __future__ import annotations

import math
import re
import signal
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from headwater.config import load_connection
from headwater.metadata_store import MetadataStore
from headwater.sdk import Partition, PlanContext, read_fields_locally
from headwater.sdk.http import HttpStream
from tests.api_server import BASE_EPOCH, ApiData, ApiServer, running
from tests.integration._cli import HOME, store
from tests.integration._cli import sync as cli_sync
from tests.integration._in_process import sync_in_process
from tests.integration.connectors.rest._rest import (
    END_1,
    END_2,
    LIMIT,
    PERIOD_S,
    connection,
    surveys_until,
    sync,
    table_ids,
)

pytestmark = pytest.mark.spark

END_1_EPOCH = BASE_EPOCH + 11 * 86_400
END_2_EPOCH = BASE_EPOCH + 19 * 86_400
PER_PAGE = 4  # what _rest.connection sets


@pytest.fixture
def api() -> Iterator[ApiServer]:
    with running(ApiData.sample(surveys=40, issues=0), limit=LIMIT, period_s=PERIOD_S,
                 latency_s=0.005) as server:
        yield server


def responses_only(path: Path, destination_sync_mode: str = "overwrite",
                   per_checkpoint: int | None = None) -> HttpStream:
    """Sync only ``survey_responses`` (its parent ``surveys`` stays a stream of the
    source, read for its pages, but no table of its own); return the child stream."""
    document = yaml.safe_load(path.read_text())
    document["streams"] = [{"name": "survey_responses", "sync_mode": "full_refresh",
                            "destination_sync_mode": destination_sync_mode}]
    if per_checkpoint is not None:
        document["checkpoint"]["partitions_per_checkpoint"] = per_checkpoint
    path.write_text(yaml.safe_dump(document))
    from headwater.engine.connection import build_source

    child = build_source(load_connection(path)).stream("survey_responses")
    assert isinstance(child, HttpStream)
    return child


def response_rows(spark: Any, tmp_path: Path) -> Counter[tuple[Any, ...]]:
    table = spark.read.format("delta").load(str(tmp_path / "lake" / "survey_responses"))
    rows = table.select("id", "survey_id", "answer").toArrow().to_pylist()
    return Counter((r["id"], r["survey_id"], r["answer"]) for r in rows)


def old_path_rows(child: HttpStream) -> Counter[tuple[Any, ...]]:
    """The child's rows as the earlier plan read them: the parent's key fields read
    first (``read_fields_locally``), then partitions of up to 10 parents each."""
    assert child.parent is not None
    parents = read_fields_locally(child.parent, child.parent.plan(None, PlanContext()), ["id"])
    partitions = [Partition(child.name, f"old-{i}", {"parents": parents[i:i + 10], "tasks": 1})
                  for i in range(0, len(parents), 10)]
    return Counter((r["id"], r["survey_id"], r["answer"])
                   for p in partitions for r in child.records(p))


def survey_pages(api: ApiServer, days: int = 19) -> int:
    """Pages of ``/v3/surveys`` one read of every day window of the first ``days``
    takes (19: up to END_2)."""
    pages = 0
    for day in range(days):
        low = BASE_EPOCH + day * 86_400
        count = sum(1 for s in api.data.surveys.values()
                    if low <= s["date_modified"] < low + 86_400)
        pages += max(1, math.ceil(count / PER_PAGE))
    return pages


def test_children_start_while_the_parent_is_read_and_rows_equal_the_old_path(
        spark: Any, tmp_path: Path, api: ApiServer) -> None:
    path = connection(tmp_path, api, "surveys.yaml", end=END_2)
    child = responses_only(path)
    result = sync(path)
    assert result.status == "succeeded", result.to_dict()
    arrivals = [path for _, path, _ in sorted(api.calls)]  # by arrival at the server
    parent_calls = [at for at, p in enumerate(arrivals) if p == "/v3/surveys"]
    child_calls = [at for at, p in enumerate(arrivals) if p.endswith("/responses")]
    # Nothing is read to plan: each parent page is asked for once in the sync, and the
    # first children are asked for before the parent's last page.
    assert len(parent_calls) == survey_pages(api)
    parents = [i for i, s in api.data.surveys.items() if s["date_modified"] < END_2_EPOCH]
    assert len(child_calls) == sum(max(1, math.ceil(len(api.data.responses[i]) / PER_PAGE))
                                   for i in parents)
    assert child_calls[0] < parent_calls[-1]

    landed = response_rows(spark, tmp_path)
    assert landed == old_path_rows(child)
    assert sum(landed.values()) == sum(len(api.data.responses[i]) for i in parents)


def test_a_substream_killed_after_a_commit_resumes_with_each_row_once(
        spark: Any, tmp_path: Path, api: ApiServer) -> None:
    # `append`: a checkpoint committed twice would show as its rows twice.  One
    # parent window a partition, 3 a checkpoint: 7 checkpoints in 2 lanes.  The kill is
    # simulated in this process (``_in_process``): what is proved is the substream's plan
    # resumed, and what a real SIGKILL leaves behind is ``test_crash_resume``'s.
    path = connection(tmp_path, api, "surveys.yaml", end=END_2, store=False)
    child = responses_only(path, "append", per_checkpoint=3)
    killed = sync_in_process(tmp_path, path, env={"HEADWATER_FAULT": "after-commit:3"})
    assert killed.exit_code == -signal.SIGKILL, killed.describe()
    run = store(tmp_path).find_unfinished_run(load_connection(path).name)
    assert run is not None
    planned = run.plan["streams"][0]["checkpoints"]
    assert len(planned) == 7
    assert all("parent_partition" in p["params"] for c in planned for p in c["partitions"])

    # --one-run: this test is about the old plan's resumed run; a new run (a second
    # full refresh, appended) would add a second copy of the rows.
    resumed = sync_in_process(tmp_path, path, "--one-run")  # nothing killed: in this process
    assert resumed.exit_code == 0, resumed.describe()
    assert resumed.document is not None
    assert resumed.document["resumed"] is True and resumed.document["run_id"] == run.run_id
    landed = response_rows(spark, tmp_path)
    assert landed == old_path_rows(child)
    assert set(landed.values()) == {1}  # each row once


def test_a_parent_synced_with_its_substream_is_read_once_per_run(
        spark: Any, tmp_path: Path, api: ApiServer) -> None:
    # Both streams synced (the example: surveys incremental, responses a full refresh
    # of every survey's responses).  First run: every parent window once.  Second run,
    # further on: the windows after the parent's state are the parent's own, read once
    # for both streams; the substream alone reads those before.
    path = connection(tmp_path, api, "surveys.yaml", end=END_1)
    first = sync(path)
    assert first.status == "succeeded", first.to_dict()
    paths = [p for _, p, _ in api.calls]
    assert paths.count("/v3/surveys") == survey_pages(api, days=11)
    assert table_ids(spark, tmp_path, "surveys") == surveys_until(api, END_1_EPOCH)
    parents = [i for i in api.data.surveys if api.data.surveys[i]["date_modified"] < END_1_EPOCH]
    assert sum(response_rows(spark, tmp_path).values()) == sum(
        len(api.data.responses[i]) for i in parents)

    document = yaml.safe_load(path.read_text())
    document["source"]["config"]["streams"][0]["end_date"] = END_2
    path.write_text(yaml.safe_dump(document))
    calls_before = len(api.calls)
    second = sync(path)
    assert second.status == "succeeded", second.to_dict()
    paths = [p for _, p, _ in api.calls[calls_before:]]
    assert paths.count("/v3/surveys") == survey_pages(api)
    assert table_ids(spark, tmp_path, "surveys") == surveys_until(api, END_2_EPOCH)
    landed = response_rows(spark, tmp_path)
    assert set(landed.values()) == {1}
    assert sum(landed.values()) == sum(
        len(api.data.responses[i]) for i in api.data.surveys
        if api.data.surveys[i]["date_modified"] < END_2_EPOCH)
    # The run's shared folder went with the run.
    run = MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}").get_run(second.run_id)
    assert run is not None and run.plan.get("shared_dir")
    assert not Path(run.plan["shared_dir"]).exists()


@pytest.fixture
def unlimited_api() -> Iterator[ApiServer]:
    """The API with no limit of its own on calls per second."""
    with running(ApiData.sample(surveys=40, issues=0), latency_s=0.005) as server:
        yield server


def test_a_cli_sync_calls_the_api_while_spark_starts_and_each_call_once(
        spark: Any, tmp_path: Path, unlimited_api: ApiServer) -> None:
    # No call budget, so the driver reads early (a per-task budget would forbid it).
    api = unlimited_api
    path = connection(tmp_path, api, "surveys.yaml", end=END_2, store=False, rate_limit={})
    result = cli_sync(tmp_path, path, "-vv")
    assert result.exit_code == 0, result.describe()
    # The calls were made by a process of their own, which the driver reaped; what it
    # said reached the driver's log (the Spark log while Spark started, else stderr).
    said = result.stderr + (tmp_path / HOME / "logs" / "spark.log").read_text()
    assert re.search(r"early reads' process \d+ ended: exit 0", said), said[-3000:]
    started = re.search(r"early reads: (\d+) of (\d+) calls started", said)
    assert started and started[1] == started[2], said[-3000:]
    assert result.document is not None
    run = store(tmp_path).get_run(result.document["run_id"])
    assert run is not None
    # The first call came before the run was planned and recorded (Spark was starting).
    wall = time.time() - time.monotonic()
    assert min(t for t, _, _ in api.calls) + wall < run.started_at.timestamp()
    paths = [p for _, p, _ in api.calls]
    assert paths.count("/v3/surveys") == survey_pages(api)  # each parent window once
    parents = [i for i, s in api.data.surveys.items() if s["date_modified"] < END_2_EPOCH]
    assert sum(1 for p in paths if p.endswith("/responses")) == sum(  # each page once
        max(1, math.ceil(len(api.data.responses[i]) / PER_PAGE)) for i in parents)
    assert table_ids(spark, tmp_path, "surveys") == surveys_until(api, END_2_EPOCH)
    landed = response_rows(spark, tmp_path)
    assert set(landed.values()) == {1}
    assert sum(landed.values()) == sum(len(api.data.responses[i]) for i in parents)
    assert run.plan.get("shared_dir") and not Path(run.plan["shared_dir"]).exists()
