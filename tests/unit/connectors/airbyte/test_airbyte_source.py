"""The ``airbyte`` source type against a real connector process (the fake connector)."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from headwater.config import mask
from headwater.connectors import get_source_class
from headwater.connectors.airbyte import AirbyteSource, ConnectorEnv
from headwater.connectors.airbyte._process import RecordBlock
from headwater.connectors.airbyte._records import RecordDecoder
from headwater.engine._task import TaskContext, read_partition
from headwater.errors import AuthenticationError, ConfigError, ConnectorError
from headwater.protocol import global_stream_state
from headwater.sdk import ConnectorStateCursor, FinalStateCursor, PartitionState, Stream
from headwater.table_schema import arrow_schema_for
from tests.unit.connectors.airbyte.conftest import FAKE_CONNECTOR, fake_source_config

GLOBAL_CONNECTOR = FAKE_CONNECTOR.with_name("global_state_connector.py")


def _read(source: AirbyteSource, state: dict | None = None) -> tuple[list[dict], list[dict]]:
    records, states, _ = _read_in_order(source, state)
    return records, states


def _read_in_order(source: AirbyteSource, state: dict | None = None,
                   ) -> tuple[list[dict], list[dict], list[tuple[str, int]]]:
    """Records, states, and what came out in order: ("batch"|"dicts"|"state", rows)."""
    stream = source.stream("items")
    (partition,) = stream.partitions(state)
    records: list[dict] = []
    states: list[dict] = []
    order: list[tuple[str, int]] = []
    for item in stream.read(partition):
        if isinstance(item, PartitionState):
            states.append(dict(item.state))
            order.append(("state", 0))
        elif isinstance(item, pa.RecordBatch):
            records += item.to_pylist()
            order.append(("batch", item.num_rows))
        else:
            records.append(dict(item))
            order.append(("dicts", 1))
    return records, states, order


def test_registered_as_a_built_in() -> None:
    assert get_source_class("airbyte") is AirbyteSource


def test_an_entrypoint_beside_a_command_is_refused(tmp_path: Path) -> None:
    # The command runs as given: the entrypoint was accepted and ignored.
    ran = tmp_path / "ran"
    config = {"command": ["touch", str(ran)], "entrypoint": "source-faker", "config": {}}
    with pytest.raises(ConfigError) as caught:
        AirbyteSource(config)
    assert caught.value.context["field"] == "source.config.entrypoint"
    assert "runs its command instead, so it would be ignored" in caught.value.message
    assert not ran.exists()  # refused before the connector is asked anything


def test_discover_gives_streams_with_keys_cursor_and_one_partition() -> None:
    source = AirbyteSource(fake_source_config(records=3))
    (stream,) = source.streams()
    assert stream.stream_name == "items"
    assert tuple(stream.primary_key) == ("id",)
    assert stream.cursor_field == "updated_at"
    assert stream.supported_sync_modes == ["full_refresh", "incremental"]
    assert stream.keeps_own_state
    (partition,) = stream.partitions({"cursor": 2})
    # The plan records the state and the catalog entry the read is given.
    assert partition.params["state"] == {"cursor": 2}
    assert partition.params["stream"]["name"] == "items"
    assert partition.params["stream"]["json_schema"] == stream.json_schema()
    assert isinstance(stream.cursor(None, True), ConnectorStateCursor)
    assert isinstance(stream.cursor(None, False), FinalStateCursor)


def test_read_yields_records_then_the_connectors_states_and_resumes_from_state() -> None:
    source = AirbyteSource(fake_source_config(records=25, state_every=10))
    records, states = _read(source)
    assert [r["id"] for r in records] == list(range(1, 26))
    assert states == [{"cursor": 10}, {"cursor": 20}, {"cursor": 25}]
    records, states = _read(source, {"cursor": 20})
    assert [r["id"] for r in records] == [21, 22, 23, 24, 25]
    assert states[-1] == {"cursor": 25}


def test_compact_records_come_as_arrow_batches_each_before_the_state_that_covers_them() -> None:
    source = AirbyteSource(fake_source_config(records=25, state_every=10, compact=True))
    records, states, order = _read_in_order(source)
    assert records == [{"id": n, "updated_at": n, "label": f"item {n}"} for n in range(1, 26)]
    assert states == [{"cursor": 10}, {"cursor": 20}, {"cursor": 25}]
    assert order == [("batch", 10), ("state", 0), ("batch", 10), ("state", 0), ("batch", 5),
                     ("state", 0)]


def test_a_record_of_the_wrong_type_is_kept_with_a_note_through_the_per_record_path() -> None:
    source = AirbyteSource(fake_source_config(records=12, state_every=5, compact=True,
                                              bad_id_at=7))
    _, _, order = _read_in_order(source)
    # The block holding the bad record (6..10) is decoded record by record; the others in bulk.
    assert order == [("batch", 5), ("state", 0)] + [("dicts", 1)] * 5 + \
        [("state", 0), ("batch", 2), ("state", 0)]
    stream = source.stream("items")
    (partition,) = stream.partitions(None)
    context = TaskContext(run_id="r", checkpoint_index=0,
                          data_schema=arrow_schema_for(stream.json_schema()))
    rows = pa.Table.from_batches(list(read_partition(stream, partition, context))).to_pylist()
    assert [r["updated_at"] for r in rows] == list(range(1, 13))  # nothing dropped
    bad = rows[6]
    assert bad["id"] is None and bad["label"] == "item 7"
    assert bad["_hw_notes"] == [{"field": "id", "reason": bad["_hw_notes"][0]["reason"],
                                 "value": "not-a-number"}]
    assert "int64" in bad["_hw_notes"][0]["reason"]
    assert all(r["_hw_notes"] is None for r in rows if r is not bad)


def test_json_columns_land_as_the_per_record_path_makes_them_not_as_decoded_in_bulk() -> None:
    """``json_columns: [id, label]``: the table keeps them as JSON text, which the bulk
    decoder (typing by the stream's own columns) would hand over as an integer and a
    bare string; the engine types such records itself (``Stream.lands_in``)."""
    source = AirbyteSource(fake_source_config(records=12, state_every=5, compact=True))
    stream = source.stream("items")
    (partition,) = stream.partitions(None)
    landing = arrow_schema_for(stream.json_schema(), ["id", "label"])
    rows = pa.Table.from_batches(list(read_partition(
        stream, partition, TaskContext(run_id="r", checkpoint_index=0,
                                       data_schema=landing)))).to_pylist()
    assert [(r["id"], r["label"]) for r in rows] == [
        (json.dumps(n), json.dumps(f"item {n}")) for n in range(1, 13)]
    assert all(r["_hw_notes"] is None for r in rows)


def test_connector_logs_reach_headwater_logs(caplog: pytest.LogCaptureFixture) -> None:
    source = AirbyteSource(fake_source_config(records=1))
    with caplog.at_level(logging.INFO, logger="headwater.connectors.airbyte"):
        _read(source, {"cursor": 0})
    assert any("fake connector starts after 0" in r.getMessage() and r.levelno == logging.WARNING
               for r in caplog.records)


def test_error_trace_fails_the_read_with_the_connectors_message() -> None:
    source = AirbyteSource(fake_source_config(records=50, fail="trace", fail_after=15))
    with pytest.raises(ConnectorError, match="the fake API said no"):
        _read(source)


def test_crash_mid_stream_fails_the_read() -> None:
    source = AirbyteSource(fake_source_config(records=50, fail="crash", fail_after=15))
    with pytest.raises(ConnectorError, match="exited with code 3 before finishing"):
        _read(source)


def test_connector_config_is_checked_against_its_own_spec_and_secrets_are_masked() -> None:
    with pytest.raises(ConfigError, match="records"):
        AirbyteSource(fake_source_config(state_every=3))
    source = AirbyteSource(fake_source_config(records=1, token="fake-token-4f9a1c"))
    assert "fake-token-4f9a1c" not in mask("token fake-token-4f9a1c")
    assert source.config["config"]["token"] != "fake-token-4f9a1c"


def test_check_reports_a_refusal() -> None:
    AirbyteSource(fake_source_config(records=1)).check()
    with pytest.raises(AuthenticationError, match="refused"):
        AirbyteSource(fake_source_config(records=1, token="token-denied-7f3c")).check()


def test_a_package_must_be_pinned() -> None:
    with pytest.raises(ConfigError, match="version"):
        ConnectorEnv(package="airbyte-source-faker", version=">=7", root="/tmp")
    with pytest.raises(ConfigError, match="command"):
        ConnectorEnv(root="/tmp")
    assert ConnectorEnv(package="airbyte-source-faker", version="7.2.1",
                        root="/envs").script == "source-faker"
    env = ConnectorEnv(command_line=(sys.executable, "x"))
    assert env.command() == [sys.executable, "x"]


def test_a_malformed_record_line_still_fails_the_read_as_before() -> None:
    block = RecordBlock(['{"type":"RECORD","record":{"stream":"items","data":{"id":1}}}\n',
                         '{"type":"RECORD","record":{"stream":"items","data":{"id":\n'],
                        label="fake", stream="items")
    assert RecordDecoder("items", {"properties": {"id": {"type": "integer"}}}).decode(
        block.lines) is None
    records = block.records()
    assert next(records).data == {"id": 1}
    with pytest.raises(ConnectorError, match="fake printed an invalid message"):
        next(records)


def test_a_global_state_connector_is_handed_its_shared_and_stream_parts_back() -> None:
    source = AirbyteSource({"command": [sys.executable, str(GLOBAL_CONNECTOR)],
                            "config": {"records": 2}})
    stream = source.stream("events")
    first = _read_all(stream, None)
    assert first[-1] == PartitionState(global_stream_state({"lsn": 1020}, {"last_id": 2}))
    second = _read_all(stream, dict(first[-1].state))
    assert second[:-1] == [{"id": 3, "lsn": 1030, "seen_lsn": 1020},
                           {"id": 4, "lsn": 1040, "seen_lsn": 1020}]


def _read_all(stream: Stream, state: dict | None) -> list:
    (partition,) = stream.partitions(state)
    items: list = []
    for item in stream.read(partition):
        items += item.to_pylist() if isinstance(item, pa.RecordBatch) else [item]
    return items


def test_prepare_starts_discover_in_the_background_and_it_runs_once(tmp_path) -> None:
    """The engine calls ``prepare`` before it starts Spark: discover runs meanwhile."""
    import time

    invocations = tmp_path / "invocations.log"
    source = AirbyteSource({"command": [sys.executable, str(FAKE_CONNECTOR), "--invocations",
                                        str(invocations)], "config": {"records": 1}})
    source.prepare()
    waited = 0.0
    while "discover" not in (invocations.read_text() if invocations.exists() else ""):
        assert waited < 60, "prepare started no discover"
        time.sleep(0.05)
        waited += 0.05
    source.prepare()
    assert [s.stream_name for s in source.streams()] == ["items"]
    assert [s.stream_name for s in source.streams()] == ["items"]
    assert invocations.read_text().splitlines() == ["spec", "discover"]


def test_a_failed_discover_fails_whoever_asks_for_the_streams() -> None:
    source = AirbyteSource({"command": [sys.executable, str(FAKE_CONNECTOR)],
                            "config": {"records": 1, "fail": "discover"}})
    source.prepare()
    with pytest.raises(ConnectorError, match="discover refused"):
        source.streams()


def _head_started(tmp_path, state_guess: dict | None):
    invocations = tmp_path / "invocations.log"
    source = AirbyteSource({"command": [sys.executable, str(FAKE_CONNECTOR), "--invocations",
                                        str(invocations)],
                            "config": {"records": 30, "state_every": 10, "compact": True}})
    source.prepare({"items": state_guess})
    return source, invocations


def _records_and_states(stream: Stream, partition) -> tuple[list[int], list[dict]]:
    ids: list[int] = []
    states: list[dict] = []
    for item in stream.read(partition):
        if isinstance(item, PartitionState):
            states.append(dict(item.state))
        elif isinstance(item, pa.RecordBatch):
            ids += item.column("id").to_pylist()
        else:
            ids.append(item["id"])
    return ids, states


def test_a_read_started_before_spark_is_followed_once_then_reads_start_afresh(tmp_path) -> None:
    source, invocations = _head_started(tmp_path, {"cursor": 10})
    stream = source.stream("items")
    (partition,) = stream.partitions({"cursor": 10})
    assert "head_start" in partition.params  # the plan's state is the one guessed
    assert "token" not in str(partition.params) and "records" not in str(partition.params)
    followed = _records_and_states(stream, partition)
    assert followed == (list(range(11, 31)), [{"cursor": 20}, {"cursor": 30}, {"cursor": 30}])
    assert invocations.read_text().splitlines() == ["spec", "discover", "read items"]
    # A retry of the task finds the spool claimed: it starts the connector itself.
    assert _records_and_states(stream, partition) == followed
    assert invocations.read_text().splitlines().count("read items") == 2


def test_a_read_started_from_another_state_is_discarded(tmp_path) -> None:
    source, invocations = _head_started(tmp_path, None)
    stream = source.stream("items")
    (partition,) = stream.partitions({"cursor": 10})
    assert "head_start" not in partition.params
    ids, _ = _records_and_states(stream, partition)
    assert ids == list(range(11, 31))
    # The guessed read was killed (before or after it logged its start), the plan's ran.
    assert invocations.read_text().splitlines().count("read items") in (1, 2)


def test_a_head_started_read_that_crashes_fails_the_partition(tmp_path) -> None:
    source = AirbyteSource({"command": [sys.executable, str(FAKE_CONNECTOR)],
                            "config": {"records": 30, "fail": "crash", "fail_after": 5}})
    source.prepare({"items": None})
    stream = source.stream("items")
    (partition,) = stream.partitions(None)
    assert "head_start" in partition.params
    with pytest.raises(ConnectorError, match="exited with code 3"):
        list(stream.read(partition))
