"""The declarative ``rest`` source: its spec, its secrets, its plans (no Spark)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable
from itertools import pairwise
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import yaml

from headwater.config import secret_values, validate_config
from headwater.connectors import get_source_class
from headwater.connectors.rest import RestSource
from headwater.errors import AuthenticationError, ConfigError, SpecValidationError
from headwater.sdk import Partition, PlanContext
from tests.api_server import TOKEN, ApiData, Fault, running

EXAMPLES = Path(__file__).resolve().parents[4] / "examples"


def example(name: str, **changes: Any) -> dict[str, Any]:
    config: dict[str, Any] = yaml.safe_load((EXAMPLES / name).read_text())["source"]["config"]
    config.update({"base_url": "http://127.0.0.1:9", "auth": {"type": "bearer", "token": TOKEN},
                   **changes})
    return config


def rows_of(items: Iterable[Any]) -> list[dict[str, Any]]:
    """What ``read`` yielded (Arrow batches or dicts), as dict rows."""
    return [row for item in items
            for row in (item.to_pylist() if isinstance(item, pa.RecordBatch) else [item])]


def source(config: dict[str, Any]) -> RestSource:
    return RestSource(validate_config(RestSource.spec(), config, where="source.config"))


def test_rest_is_a_built_in_source() -> None:
    assert get_source_class("rest") is RestSource


@pytest.mark.parametrize("auth", [
    {"type": "bearer", "token": "T0KEN"},
    {"type": "api_key", "name": "key", "value": "T0KEN", "where": "query"},
    {"type": "basic", "username": "u", "password": "T0KEN"},
    {"type": "oauth2", "token_url": "http://x/t", "client_id": "c", "client_secret": "T0KEN"},
])
def test_every_credential_is_a_spec_secret(auth: dict[str, Any]) -> None:
    config = example("surveys.yaml", auth=auth)
    assert "T0KEN" in secret_values(RestSource.spec(), config)


def test_a_wrong_config_names_the_field() -> None:
    config = example("github.yaml")
    config["streams"][0]["cursor_format"] = "unix"
    with pytest.raises(SpecValidationError) as caught:
        source(config)
    assert "streams" in str(caught.value) and "cursor_format" in str(caught.value)


def test_parents_must_exist_and_not_form_cycles() -> None:
    config = example("surveys.yaml")
    config["streams"][1]["parent"]["stream"] = "nope"
    with pytest.raises(ConfigError, match="parent 'nope'"):
        source(config)
    config = example("surveys.yaml")
    config["streams"][0]["parent"] = {"stream": "survey_responses"}
    config["streams"][0].pop("cursor_field")
    with pytest.raises(ConfigError, match="cycle"):
        source(config)


@pytest.mark.parametrize("setting", ["start_date", "end_date", "window_size_seconds",
                                     "windows_per_partition", "cursor_format"])
def test_a_window_setting_without_a_cursor_field_is_refused(setting: str) -> None:
    # Without a cursor the calls are not cut into windows: the setting was ignored.
    config = example("github.yaml")
    stream = config["streams"][0]
    window = {"start_date": "2024-01-01T00:00:00Z", "end_date": "2024-02-01T00:00:00Z",
              "window_size_seconds": 3600, "windows_per_partition": 2, "cursor_format": "epoch"}
    for key in ("cursor_field", *window):
        stream.pop(key, None)
    source(config)  # a full refresh stream, nothing of windows: taken
    stream[setting] = window[setting]
    with pytest.raises(ConfigError) as caught:
        source(config)
    assert caught.value.context["field"] == f"source.config.streams[0].{setting}"
    assert f"has no cursor_field, so its calls are not cut into date windows and {setting} " \
        "would be ignored" in caught.value.message


def test_incremental_windows_cover_the_gaps_and_carry_the_task_count() -> None:
    config = example("surveys.yaml")
    config["streams"][0].update(end_date="2024-01-15T00:00:00Z")
    stream = source(config).stream("surveys")
    state = {"state_type": "date-range", "cursor_field": "date_modified",
             "slices": [{"start": 1_704_067_200, "end": 1_704_067_200 + 7 * 86_400}]}
    plan = stream.plan(state, PlanContext(parallel_tasks=4))
    assert [(p.params["start"], p.params["end"]) for p in plan] == [
        (1_704_067_200 + 7 * 86_400, 1_704_067_200 + 14 * 86_400)]
    assert plan[0].params["tasks"] == 4


def test_substream_partitions_are_parent_partitions_planned_without_a_call() -> None:
    with running(ApiData.sample(surveys=25)) as api:
        config = example("surveys.yaml", base_url=api.url)
        config["streams"][0].update(end_date="2024-02-01T00:00:00Z")
        rest = source(config)
        child = rest.stream("survey_responses")
        plan = child.plan(None, PlanContext(parallel_tasks=2))
        assert api.calls == []  # planning reads nothing
        parents = rest.stream("surveys").plan(None, PlanContext(parallel_tasks=2))
        # One partition of the child per API window of the parent, the same windows.
        windows = [(u["start"], u["end"]) for p in parents
                   for u in rest.stream("surveys")._units(p)]
        assert [(p.params["parent_partition"]["params"]["start"],
                 p.params["parent_partition"]["params"]["end"]) for p in plan] == windows
        assert len(plan) == 31 and all(p.params["tasks"] == 2 for p in plan)
        rows = [r for part in plan for r in rows_of(child.read(part))]
    assert sorted(r["id"] for r in rows) == sorted(
        r["id"] for rs in api.data.responses.values() for r in rs)
    assert all(r["survey_id"] == r["id"] // 1000 for r in rows)


def test_children_start_before_the_parent_s_last_page() -> None:
    # One parent partition of one window, 25 surveys on 5 pages of 5: the responses of
    # the first page's surveys are asked for while the parent's later pages are.
    with running(ApiData.sample(surveys=25), latency_s=0.01) as api:
        config = example("surveys.yaml", base_url=api.url)
        config["streams"][0].update(end_date="2024-02-01T00:00:00Z",
                                    window_size_seconds=40 * 86_400)
        config["streams"][0]["params"]["per_page"] = 5
        child = source(config).stream("survey_responses")
        [partition] = child.plan(None, PlanContext(parallel_tasks=1))
        rows = rows_of(child.read(partition))
        arrivals = sorted(api.calls)  # by arrival at the server
    assert len(rows) == sum(i % 7 for i in range(1, 26))
    paths = [path for _, path, _ in arrivals]
    parent_pages = [at for at, path in enumerate(paths) if path == "/v3/surveys"]
    assert len(parent_pages) == 5
    first_child = next(at for at, path in enumerate(paths) if path.endswith("/responses"))
    assert first_child < parent_pages[-1]


def test_a_substream_partition_planned_by_an_earlier_version_still_reads() -> None:
    # Plans recorded before substreams read their parents' pages held the parents'
    # key fields: a resumed run re-executes them as recorded.
    with running(ApiData.sample(surveys=10)) as api:
        config = example("surveys.yaml", base_url=api.url)
        child = source(config).stream("survey_responses")
        old = Partition("survey_responses", "survey_responses:parents:0123456789abcdef",
                        {"parents": [{"id": 3}, {"id": 5}], "tasks": 2})
        rows = rows_of(child.read(old))
    assert sorted(r["id"] for r in rows) == [3000, 3001, 3002, 5000, 5001, 5002, 5003, 5004]
    assert sorted(path for _, path, _ in api.calls) == [
        "/v3/surveys/3/responses", "/v3/surveys/5/responses"]


def test_ignore_404_reads_nothing_for_a_deleted_parent() -> None:
    with running(ApiData.sample(surveys=3)) as api:
        config = example("surveys.yaml", base_url=api.url)
        config["streams"][0].update(end_date="2024-02-01T00:00:00Z")
        child = source(config).stream("survey_responses")
        plan = child.plan(None, PlanContext())
        # Deleted between the parent's page and the child's call: its responses answer 404.
        api.faults.append(Fault("^/v3/surveys/2/responses$", status=404))
        rows = [r for part in plan for r in rows_of(child.read(part))]
    # Survey i has i % 7 responses: 1 and 3 have some, 2 is gone.
    assert {r["survey_id"] for r in rows} == {1, 3}
    assert 404 in [status for _, _, status in api.calls]


def test_json_columns_land_as_the_engine_types_records_not_as_typed_by_the_stream() -> None:
    """``json_columns: [id, title]``: the table keeps them as JSON text; the stream, told
    so (``Stream.lands_in``), types its pages for those columns, as the engine would
    type the dicts, instead of handing over an integer and a bare string."""
    from headwater.engine._task import TaskContext, read_partition
    from headwater.table_schema import arrow_schema_for

    with running(ApiData.sample(surveys=3)) as api:
        config = example("surveys.yaml", base_url=api.url)
        config["streams"][0].update(end_date="2024-02-01T00:00:00Z")
        stream = source(config).stream("surveys")
        landing = arrow_schema_for(stream.json_schema(), ["id", "title"])
        context = TaskContext(run_id="r", checkpoint_index=0, data_schema=landing)
        rows = [r for part in stream.plan(None, PlanContext())
                for r in pa.Table.from_batches(list(read_partition(stream, part, context)),
                                               schema=context.output_schema).to_pylist()]
    assert sorted((r["id"], r["title"]) for r in rows) == [
        (json.dumps(i), json.dumps(f"survey {i}")) for i in (1, 2, 3)]
    assert all(r["_hw_notes"] is None for r in rows)


def test_check_reports_a_refused_token() -> None:
    with running(ApiData.sample(surveys=3)) as api:
        good = source(example("github.yaml", base_url=api.url))
        good.check()
        bad = source(example("github.yaml", base_url=api.url,
                             auth={"type": "bearer", "token": "nope"}))
        with pytest.raises(AuthenticationError, match="HTTP 401"):
            bad.check()


def test_a_budget_too_small_to_split_fails_at_plan_time() -> None:
    config = example("github.yaml", rate_limit={"budgets": [{"calls": 3, "period_seconds": 60}]})
    config["streams"][0].update(end_date="2024-01-15T00:00:00Z")
    stream = source(config).stream("issues")
    assert len(stream.plan(None, PlanContext(parallel_tasks=3))) == 1
    with pytest.raises(ConfigError, match="cannot be split across 4"):
        stream.plan(None, PlanContext(parallel_tasks=4))
    config["rate_limit"]["redis_url"] = "redis://127.0.0.1:9/0"  # one shared budget: no split
    assert source(config).stream("issues").plan(None, PlanContext(parallel_tasks=4))


DAY = 86_400
JAN_1 = 1_704_067_200  # 2024-01-01T00:00:00Z, the example's start_date


def test_a_synced_parent_and_its_substream_cut_the_same_windows_and_share_them(
        tmp_path: Path) -> None:
    # The parent's state ends mid-day (a run planned "now" last time): the child's
    # windows before it are its own; from there on they are the parent's own windows,
    # read through the run's shared folder.
    config = example("surveys.yaml")
    config["streams"][0].update(end_date="2024-01-10T00:00:00Z", windows_per_partition=2)
    rest = source(config)
    state_end = JAN_1 + 4 * DAY + 3_600
    state = {"state_type": "date-range", "cursor_field": "date_modified",
             "slices": [{"start": JAN_1, "end": state_end}]}
    context = PlanContext(parallel_tasks=2, shared_dir=str(tmp_path),
                          synced_states={"surveys": state, "survey_responses": None})
    parents = rest.stream("surveys").plan(state, context)
    assert all(p.params["shared_pages"] == str(tmp_path) for p in parents)
    own = [(u["start"], u["end"]) for p in parents for u in rest.stream("surveys")._units(p)]
    assert own[0] == (state_end, state_end + DAY)

    plan = rest.stream("survey_responses").plan(None, context)
    windows = [(p.params["parent_partition"]["params"]["start"],
                p.params["parent_partition"]["params"]["end"]) for p in plan]
    shared = [w for w, p in zip(windows, plan, strict=True) if "shared_pages" in p.params]
    assert shared == own
    # Every second from start_date to end_date exactly once, in order.
    assert windows[0][0] == JAN_1 and windows[-1][1] == JAN_1 + 9 * DAY
    assert all(a[1] == b[0] for a, b in pairwise(windows))
    assert (JAN_1 + 4 * DAY, state_end) in windows  # the day cut where the state ends
    assert all("shared_pages" not in p.params["parent_partition"]["params"] for p in plan)


def test_nothing_is_shared_unless_parent_and_child_are_both_synced(tmp_path: Path) -> None:
    config = example("surveys.yaml")
    config["streams"][0].update(end_date="2024-01-10T00:00:00Z")
    rest = source(config)
    for synced in ({"surveys": None}, {"survey_responses": None}):
        context = PlanContext(parallel_tasks=2, shared_dir=str(tmp_path), synced_states=synced)
        for name in synced:
            assert all("shared_pages" not in p.params
                       for p in rest.stream(name).plan(None, context))
    both = PlanContext(parallel_tasks=2, synced_states={"surveys": None,
                                                        "survey_responses": None})
    assert all("shared_pages" not in p.params  # no folder: tasks may be on other machines
               for p in rest.stream("survey_responses").plan(None, both))


def test_a_shared_parent_call_is_made_once_for_both_streams(tmp_path: Path) -> None:
    with running(ApiData.sample(surveys=25)) as api:
        config = example("surveys.yaml", base_url=api.url)
        config["streams"][0].update(end_date="2024-02-01T00:00:00Z")
        rest = source(config)
        (tmp_path / "run").mkdir()  # the engine makes it when it plans the run
        context = PlanContext(parallel_tasks=2, shared_dir=str(tmp_path / "run"),
                              synced_states={"surveys": None, "survey_responses": None})
        children = [r for p in rest.stream("survey_responses").plan(None, context)
                    for r in rows_of(rest.stream("survey_responses").read(p))]
        parents = [r for p in rest.stream("surveys").plan(None, context)
                   for r in rows_of(rest.stream("surveys").read(p))]
        paths = [path for _, path, _ in api.calls]
    assert sorted(r["id"] for r in parents) == sorted(api.data.surveys)
    assert len(children) == sum(len(rs) for rs in api.data.responses.values())
    # One call per parent window (31 days), none again for the parent's own stream.
    assert paths.count("/v3/surveys") == 31
    assert not list((tmp_path / "run").glob("*.claim"))  # every claim ended with its pages


def early_context(folder: Path, *names: str) -> PlanContext:
    return PlanContext(parallel_tasks=2, shared_dir=str(folder), reads_early=True,
                       synced_states=dict.fromkeys(names))


def read_all(rest: RestSource, context: PlanContext, *names: str) -> dict[str, list[Any]]:
    """Every planned partition of ``names`` read in this process, as tasks would."""
    return {name: sorted(r["id"] for p in rest.stream(name).plan(None, context)
                         for r in rows_of(rest.stream(name).read(p)))
            for name in names}


def test_reads_started_early_are_the_tasks_reads_made_once(tmp_path: Path) -> None:
    # The driver reads the whole run before any task starts; the tasks' reads then
    # call nothing and give the rows a direct read gives.
    names = ("surveys", "survey_responses")
    with running(ApiData.sample(surveys=25)) as api:
        config = example("surveys.yaml", base_url=api.url, rate_limit={})
        config["streams"][0].update(end_date="2024-02-01T00:00:00Z")
        rest = source(config)
        context = early_context(tmp_path, *names)
        rest.prepare(dict.fromkeys(names), context)
        assert rest._early is not None
        assert rest._early.wait(30)
        early_calls = len(api.calls)
        rows = read_all(rest, context, *names)
        assert len(api.calls) == early_calls  # everything came from the folder
        direct = read_all(source(config), PlanContext(parallel_tasks=2), *names)
    assert rows == direct
    assert rows["surveys"] == sorted(api.data.surveys)
    assert early_calls == 31 + sum(1 for i in api.data.surveys)  # 31 windows, 1 page each


def test_tasks_reading_beside_the_driver_leave_every_call_to_it(tmp_path: Path) -> None:
    # The "tasks" here run in this process, beside the driver's reads: the folder
    # names another live process as the driver, so they wait for its calls.
    names = ("surveys", "survey_responses")
    with running(ApiData.sample(surveys=60), latency_s=0.02) as api, subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(60)"]) as other:
        try:
            config = example("surveys.yaml", base_url=api.url, concurrency=4, rate_limit={})
            config["streams"][0].update(end_date="2024-03-01T00:00:00Z")
            rest = source(config)
            context = early_context(tmp_path, *names)
            rest.prepare(dict.fromkeys(names), context)
            assert rest._early is not None
            (tmp_path / "driver.pid").write_text(str(other.pid))
            rows = read_all(rest, context, *names)
            assert rest._early.wait(30)
            started = rest._early.calls_started
            paths = [path for _, path, _ in api.calls]
        finally:
            other.kill()
        direct = read_all(source(config), PlanContext(parallel_tasks=2), *names)
    assert rows == direct
    # The driver made every call, once: 60 parent windows, 60 surveys' responses, as
    # 60 windows of the substream, each reading its parent's window itself.
    assert started == 60
    assert paths.count("/v3/surveys") == 60
    children = [p for p in paths if p.endswith("/responses")]
    assert len(children) == len(set(children)) == 60
    assert (tmp_path / "driver.done").exists()


def test_no_early_reads_with_a_per_task_call_budget(tmp_path: Path) -> None:
    config = example("surveys.yaml")
    rest = source(config)  # the example's budget: 120 calls a minute, split per task
    rest.prepare({"surveys": None}, early_context(tmp_path, "surveys"))
    assert rest._early is None
