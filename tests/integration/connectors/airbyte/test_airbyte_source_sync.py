"""Airbyte connectors synced by Headwater into Delta, on the shared Spark session.

* ``airbyte-source-faker`` (pinned, in its managed venv): a full-refresh and an
  incremental stream side by side, then the incremental stream again from the
  state Headwater stored; ids and counts must equal what the connector emits
  when run alone with the same config, catalog and state, and the stored state
  must be the connector's own last STATE.
* the fake connector (a real process speaking the protocol): an error TRACE, or
  a crash mid-stream, fails the stream, commits no row and leaves the state
  exactly as it was.
* a connector keeping GLOBAL state (``global_state_connector.py``): its second
  sync is given the shared part and the stream's part it reported in the first.

The faker venv lives in the shared connectors cache (``~/.cache/headwater`` or
``$HEADWATER_CONNECTOR_ENVS``); the first run on a machine installs it (minutes).
"""

from __future__ import annotations

import json
import signal
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from headwater.config import load_connection
from headwater.connectors.airbyte import ConnectorEnv, envs_root
from headwater.engine import SyncEngine, SyncResult
from headwater.interop import export_state
from headwater.metadata_store import MetadataStore
from headwater.protocol import global_stream_state
from tests.integration._connections import connection_file

pytestmark = pytest.mark.spark

FAKER = {"package": "airbyte-source-faker", "version": "7.2.1"}
FAKE_CONNECTOR = Path(__file__).parents[3] / "unit" / "connectors" / "airbyte" / "fake_connector.py"


@pytest.fixture(scope="module")
def faker_env() -> ConnectorEnv:
    env = ConnectorEnv(package=FAKER["package"], version=FAKER["version"], root=str(envs_root()))
    env.ensure()
    return env


def write_connection(tmp_path: Path, source: dict[str, Any],
                     streams: list[dict[str, Any]]) -> Path:
    return connection_file(tmp_path, name="ab", source_type="airbyte", source=source,
                           streams=streams)


def sync(path: Path) -> tuple[SyncResult, MetadataStore]:
    result, store, _ = sync_engine(path)
    return result, store


def sync_engine(path: Path) -> tuple[SyncResult, MetadataStore, SyncEngine]:
    connection = load_connection(path)
    store = MetadataStore(connection.metadata_store or "")
    engine = SyncEngine(connection, store)
    return engine.run(), store, engine


def ids(spark: Any, tmp_path: Path, stream: str) -> Counter[int]:
    rows = spark.read.format("delta").load(str(tmp_path / "lake" / stream)).select("id")
    return Counter(r["id"] for r in rows.collect())


def run_alone(env: ConnectorEnv, config: dict[str, Any], catalog: dict[str, Any],
              state: list[dict[str, Any]] | None) -> tuple[dict[str, Counter[int]], dict[str, Any]]:
    """The connector's own ``read``, without Headwater: record ids and last state per stream."""
    import subprocess

    from headwater.connectors.airbyte._process import connector_environment

    with tempfile.TemporaryDirectory() as folder:
        files = {"config": config, "catalog": catalog, "state": state}
        args = ["read"]
        for name, document in files.items():
            if document is not None:
                (Path(folder) / f"{name}.json").write_text(json.dumps(document))
                args += [f"--{name}", str(Path(folder) / f"{name}.json")]
        done = subprocess.run(env.command() + args, capture_output=True, text=True, check=True,
                              env=connector_environment())
    records: dict[str, Counter[int]] = {}
    states: dict[str, Any] = {}
    for line in done.stdout.splitlines():
        message = json.loads(line)
        if message["type"] == "RECORD":
            records.setdefault(message["record"]["stream"], Counter())[
                message["record"]["data"]["id"]] += 1
        elif message["type"] == "STATE":
            stream = message["state"]["stream"]
            states[stream["stream_descriptor"]["name"]] = stream["stream_state"]
    return records, states


def test_faker_full_refresh_and_incremental_match_the_connector_alone(
        spark: Any, tmp_path: Path, faker_env: ConnectorEnv) -> None:
    # always_updated=False: faker's users state says "done", so a later incremental
    # read emits nothing, and without the state it would emit every user again.
    faker = {"seed": 5, "records_per_slice": 50, "parallelism": 1, "always_updated": False}
    streams = [
        {"name": "users", "sync_mode": "incremental", "destination_sync_mode": "append_dedup",
         "primary_key": ["id"]},
        {"name": "products", "sync_mode": "full_refresh", "destination_sync_mode": "overwrite"},
    ]
    first, store, engine = sync_engine(write_connection(
        tmp_path, {**FAKER, "config": {**faker, "count": 200}}, streams))
    assert first.status == "succeeded", [s.error for s in first.streams]

    catalog = _catalog(engine.source, {"users": "incremental", "products": "full_refresh"})
    alone, alone_state = run_alone(faker_env, {**faker, "count": 200}, catalog, None)
    assert ids(spark, tmp_path, "users") == alone["users"]
    assert sum(alone["users"].values()) == 200
    assert ids(spark, tmp_path, "products") == alone["products"]
    stored = store.get_state("ab", "users")
    # The connector's own last STATE, committed (faker stamps updated_at with the clock).
    assert _without_clock(stored) == _without_clock(alone_state["users"]) == \
        {"seed": 5, "loop_offset": 200}
    assert stored is not None and stored["updated_at"]
    assert store.get_state("ab", "products") is None  # full refresh keeps no cursor

    second, store = sync(write_connection(
        tmp_path, {**FAKER, "config": {**faker, "count": 300}}, streams))
    assert second.status == "succeeded", [s.error for s in second.streams]
    state_messages = [{"type": "STREAM", "stream": {"stream_descriptor": {"name": "users"},
                                                    "stream_state": stored}}]
    users_only = {"streams": [s for s in catalog["streams"] if s["stream"]["name"] == "users"]}
    alone_more, alone_more_state = run_alone(faker_env, {**faker, "count": 300}, users_only,
                                             state_messages)
    users = next(s for s in second.streams if s.name == "users")
    assert users.records_written == sum(alone_more.get("users", Counter()).values()) == 0
    assert ids(spark, tmp_path, "users") == alone["users"]
    assert store.get_state("ab", "users") == alone_more_state.get("users", stored)
    assert ids(spark, tmp_path, "products") == alone["products"]


def _catalog(source: Any, modes: dict[str, str]) -> dict[str, Any]:
    """A configured catalog of ``modes``' streams, as an Airbyte platform would send it."""
    return {"streams": [
        {"stream": stream.model_dump(mode="json", exclude_none=True),
         "sync_mode": modes[stream.name], "destination_sync_mode": "append",
         "cursor_field": stream.default_cursor_field}
        for stream in source.catalog().streams if stream.name in modes]}


def _without_clock(state: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (state or {}).items() if k != "updated_at"}


def test_error_trace_or_crash_mid_stream_commits_nothing_and_keeps_the_state(
        spark: Any, tmp_path: Path) -> None:
    streams = [{"name": "items", "sync_mode": "incremental", "destination_sync_mode": "append"}]

    def fake(**config: Any) -> dict[str, Any]:
        return {"command": [sys.executable, str(FAKE_CONNECTOR)],
                "config": {"state_every": 10, **config}}

    first, store = sync(write_connection(tmp_path, fake(records=30), streams))
    assert first.status == "succeeded", first.streams[0].error
    assert store.get_state("ab", "items") == {"cursor": 30}
    assert sum(ids(spark, tmp_path, "items").values()) == 30

    for failure, message in (("trace", "the fake API said no"), ("crash", "exited with code 3")):
        # 25 records and two STATE messages come out before the connector fails.
        failed, store = sync(write_connection(
            tmp_path, fake(records=80, fail=failure, fail_after=25), streams))
        assert failed.status == "failed"
        assert message in (failed.streams[0].error or "")
        assert store.get_state("ab", "items") == {"cursor": 30}, failure
        assert sum(ids(spark, tmp_path, "items").values()) == 30, failure


@pytest.mark.crash
def test_a_sync_killed_after_its_commit_resumes_with_the_connectors_state(
        spark: Any, tmp_path: Path) -> None:
    """The commit carries the connector's state: a resumed attempt that finds the commit
    releases that state, so the next sync neither repeats nor skips records."""
    from tests.integration._cli import sync as sync_cli

    streams = [{"name": "items", "sync_mode": "incremental", "destination_sync_mode": "append"}]

    def connection(records: int) -> Path:
        return write_connection(tmp_path, {"command": [sys.executable, str(FAKE_CONNECTOR)],
                                           "config": {"state_every": 10, "records": records}},
                                streams)

    killed = sync_cli(tmp_path, connection(30), env={"HEADWATER_FAULT": "after-commit:1"})
    assert killed.exit_code == -signal.SIGKILL, killed.describe()  # right after the commit
    assert sum(ids(spark, tmp_path, "items").values()) == 30

    resumed, store = sync(connection(30))
    assert resumed.resumed and resumed.status == "succeeded", resumed.streams[0].error
    assert store.get_state("ab", "items") == {"cursor": 30}

    more, store = sync(connection(40))
    assert more.status == "succeeded", more.streams[0].error
    assert ids(spark, tmp_path, "items") == Counter(range(1, 41))


GLOBAL_CONNECTOR = FAKE_CONNECTOR.with_name("global_state_connector.py")


def test_a_global_state_connector_gets_its_shared_state_back_on_the_next_sync(
        spark: Any, tmp_path: Path) -> None:
    streams = [{"name": "events", "sync_mode": "incremental", "destination_sync_mode": "append"}]
    path = write_connection(tmp_path, {"command": [sys.executable, str(GLOBAL_CONNECTOR)],
                                       "config": {"records": 3}}, streams)
    first, store = sync(path)
    assert first.status == "succeeded", first.streams[0].error
    assert store.get_state("ab", "events") == global_stream_state({"lsn": 1030}, {"last_id": 3})

    second, store = sync(path)
    assert second.status == "succeeded", second.streams[0].error
    rows = spark.read.format("delta").load(str(tmp_path / "lake" / "events"))
    # The second read resumed from the shared lsn *and* the stream's last id.
    assert sorted((r["id"], r["lsn"], r["seen_lsn"]) for r in rows.collect()) == [
        (1, 1010, 1000), (2, 1020, 1000), (3, 1030, 1000),
        (4, 1040, 1030), (5, 1050, 1030), (6, 1060, 1030)]
    # Exported, the state is the connector's own last GLOBAL message.
    assert export_state(store.get_states("ab")) == [{"type": "GLOBAL", "global": {
        "shared_state": {"lsn": 1060},
        "stream_states": [{"stream_descriptor": {"name": "events"},
                           "stream_state": {"last_id": 6}}]}}]


def test_one_sync_starts_spec_and_discover_once_whatever_the_number_of_streams(
        spark: Any, tmp_path: Path) -> None:
    """The connector's spec and discover are paid once per sync: not per stream, not by
    the plan's look-ups nor by the executors, which get what the driver learned."""
    invocations = tmp_path / "invocations.log"
    names = ["items", "items_2", "items_3"]
    streams = [{"name": name, "sync_mode": "incremental", "destination_sync_mode": "append"}
               for name in names]
    source = {"command": [sys.executable, str(FAKE_CONNECTOR), "--invocations", str(invocations)],
              "config": {"records": 20, "state_every": 5, "streams": 3, "compact": True}}
    result, store = sync(write_connection(tmp_path, source, streams))
    assert result.status == "succeeded", [s.error for s in result.streams]
    for name in names:
        assert ids(spark, tmp_path, name) == Counter(range(1, 21))
        assert store.get_state("ab", name) == {"cursor": 20}
    started = Counter(invocations.read_text().splitlines())
    assert started == Counter({"spec": 1, "discover": 1, "read items": 1, "read items_2": 1,
                               "read items_3": 1}), started
