"""Syncs into a real Kafka broker, in process on the shared Spark session: each mode, the
provenance headers, a compacted topic's config, and ``headwater check`` in plain words."""

from __future__ import annotations

import json
import socket
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from headwater.connectors.sample import SampleSource
from tests.integration._connections import connection_file
from tests.integration._in_process import run_in_process, sync_in_process
from tests.integration.destinations.kafka._topic import (
    is_compacted,
    latest_per_key,
    read_topic,
    rows_of,
)

pytestmark = pytest.mark.spark

SOURCE = {"seed": 5, "users": 30, "orders": 50, "rows_per_partition": 20}
HEADERS = {"headwater.stream", "headwater.partition", "headwater.record", "headwater.run_id",
           "headwater.checkpoint"}


def _connection(tmp_path: Path, broker: Any, prefix: str, streams: list[dict[str, Any]],
                source: dict[str, Any] = SOURCE, **config: Any) -> Path:
    destination = {"type": "kafka", "config": {
        "bootstrap_servers": broker.bootstrap, "topic": prefix + "{connection}.{stream}",
        "markers_topic": prefix + "commits", **config}}
    return connection_file(tmp_path, name="shop", source=source, streams=streams,
                           destination=destination)


def test_append_full_refresh_and_incremental_land_each_row_once_with_headers(
        spark: Any, tmp_path: Path, kafka_broker: Any) -> None:
    prefix = kafka_broker.topic_prefix()
    path = _connection(tmp_path, kafka_broker, prefix, [
        {"name": "orders", "sync_mode": "full_refresh", "destination_sync_mode": "append"},
        {"name": "users", "sync_mode": "incremental", "destination_sync_mode": "append",
         "cursor_field": "updated_at"}])
    first = sync_in_process(tmp_path, path)
    assert first.exit_code == 0, first.describe()
    second = sync_in_process(tmp_path, path)
    assert second.exit_code == 0, second.describe()

    orders = read_topic(kafka_broker.bootstrap, prefix + "shop.orders")
    users = read_topic(kafka_broker.bootstrap, prefix + "shop.users")
    # Full refresh appends every row again; incremental adds nothing the second time.
    assert Counter(json.loads(r.key or "")["id"] for r in orders) == \
        Counter({i: 2 for i in range(SOURCE["orders"])})
    assert sorted(json.loads(r.key or "")["id"] for r in users) == list(range(SOURCE["users"]))
    assert all(r.key == json.dumps({"id": json.loads(r.value or "")["id"]},
                                   separators=(",", ":")) for r in users)
    for record in orders + users:
        assert set(record.headers) >= HEADERS, record.headers
    # Record numbers are unique within a source partition of a run: the provenance of seed 002.
    places = Counter((r.headers["headwater.run_id"], r.headers["headwater.partition"],
                      r.headers["headwater.record"]) for r in orders)
    assert max(places.values()) == 1 and len({p[0] for p in places}) == 2
    assert {r.headers["headwater.stream"] for r in users} == {"users"}
    # The value is the row: ISO 8601 timestamps, every column.
    expected = SampleSource(SOURCE).expected_rows("users")
    landed = rows_of(kafka_broker.bootstrap, prefix + "shop.users", expected.schema)
    assert sorted(landed.to_pylist(), key=lambda r: r["id"]) == \
        sorted(expected.to_pylist(), key=lambda r: r["id"])


def test_append_dedup_lands_in_a_compacted_topic_keyed_by_the_primary_key(
        spark: Any, tmp_path: Path, kafka_broker: Any) -> None:
    prefix = kafka_broker.topic_prefix()
    stream = {"name": "users", "sync_mode": "incremental", "destination_sync_mode": "append_dedup",
              "cursor_field": "updated_at", "primary_key": ["id"]}
    result = sync_in_process(tmp_path, _connection(tmp_path, kafka_broker, prefix, [stream]))
    assert result.exit_code == 0, result.describe()
    changed = {**SOURCE, "generation": 1}
    result = sync_in_process(tmp_path, _connection(tmp_path, kafka_broker, prefix, [stream],
                                                   source=changed))
    assert result.exit_code == 0, result.describe()
    topic = prefix + "shop.users"
    assert is_compacted(kafka_broker.bootstrap, topic)
    expected = SampleSource(changed).expected_rows("users")
    records = read_topic(kafka_broker.bootstrap, topic)
    latest = latest_per_key(records)
    assert len(latest) == expected.num_rows
    assert rows_of(kafka_broker.bootstrap, topic, expected.schema).sort_by("id").equals(
        expected.sort_by("id"))


def test_a_topic_the_broker_refuses_to_create_fails_naming_it(
        spark: Any, tmp_path: Path, kafka_broker: Any) -> None:
    prefix = kafka_broker.topic_prefix()
    path = _connection(tmp_path, kafka_broker, prefix, [
        {"name": "orders", "sync_mode": "full_refresh", "destination_sync_mode": "append"}],
        replication_factor=3)
    checked = run_in_process(tmp_path, "check", str(path))
    assert checked.exit_code != 0
    assert f"refused to create topic {prefix}commits" in checked.stdout + checked.stderr
    assert "replication factor" in (checked.stdout + checked.stderr).lower()
    synced = sync_in_process(tmp_path, path)
    assert synced.exit_code != 0
    said = synced.stdout + synced.stderr
    assert f"refused to create topic {prefix}shop.orders" in said or \
        f"refused to create topic {prefix}commits" in said, said


def test_check_names_the_host_and_port_of_a_broker_that_does_not_answer(
        tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    path = connection_file(tmp_path, name="shop", source=SOURCE, streams=[
        {"name": "orders", "sync_mode": "full_refresh", "destination_sync_mode": "append"}],
        destination={"type": "kafka", "config": {"bootstrap_servers": f"127.0.0.1:{port}"}})
    checked = run_in_process(tmp_path, "check", str(path))
    assert checked.exit_code == 1, checked.describe()
    assert f"cannot reach the Kafka broker at 127.0.0.1:{port}" in \
        checked.stdout + checked.stderr, checked.describe()


def test_overwrite_is_refused_before_anything_is_produced(
        spark: Any, tmp_path: Path, kafka_broker: Any) -> None:
    prefix = kafka_broker.topic_prefix()
    path = _connection(tmp_path, kafka_broker, prefix, [
        {"name": "orders", "sync_mode": "full_refresh", "destination_sync_mode": "overwrite"}])
    synced = sync_in_process(tmp_path, path)
    assert synced.exit_code != 0
    assert f"cannot overwrite topic {prefix}shop.orders" in synced.stdout + synced.stderr
    assert read_topic(kafka_broker.bootstrap, prefix + "shop.orders") == []


def test_a_commit_that_failed_after_its_records_landed_is_resumed_not_read_again(
        spark: Any, tmp_path: Path, kafka_broker: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The tasks' transactions landed, the commit marker could not be written: the run stays
    unfinished (outcome unknown), and the next sync produces only what did not land."""
    from headwater.destinations.kafka import KafkaDestination
    from headwater.errors import DestinationError

    prefix = kafka_broker.topic_prefix()
    path = _connection(tmp_path, kafka_broker, prefix, [
        {"name": "orders", "sync_mode": "incremental", "destination_sync_mode": "append",
         "cursor_field": "updated_at"}])
    write = KafkaDestination._write_commit_marker
    failed: list[int] = []

    def fails_once(self: KafkaDestination, marker: Any, value: bytes) -> int | None:
        if not failed:
            failed.append(marker.checkpoint_index)
            raise DestinationError("injected: the markers topic went away")
        return write(self, marker, value)

    monkeypatch.setattr(KafkaDestination, "_write_commit_marker", fails_once)
    first = sync_in_process(tmp_path, path)
    assert first.exit_code != 0 and failed, first.describe()
    second = sync_in_process(tmp_path, path)
    assert second.exit_code == 0, second.describe()
    ids = Counter(json.loads(r.key or "")["id"]
                  for r in read_topic(kafka_broker.bootstrap, prefix + "shop.orders"))
    assert ids == Counter(range(SOURCE["orders"]))


def test_a_zombie_of_a_killed_attempt_with_more_tasks_is_fenced_by_the_next_attempt(
        spark: Any, tmp_path: Path, kafka_broker: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Attempt 1 split a checkpoint of four partitions over four tasks (a bigger cluster);
    its task 3, cut off, still holds an open transaction with records of a unit. Attempt 2
    runs on two task slots, so no task of its own fences ``task-3``: the commit must, or the
    zombie's records commit later beside attempt 2's (a read_committed consumer: twice).

    The orders stream is read in runs of partitions, as an HTTP stream is
    (``one_task_per_partition = False``): a read's tasks are then as many as its slots."""
    from confluent_kafka import KafkaException, Producer

    from headwater.connectors.sample._source import OrdersStream
    from headwater.destinations.kafka import KafkaDestination, _markers
    from headwater.destinations.kafka._client import producer_settings
    from headwater.destinations.kafka._config import KafkaSettings
    from headwater.errors import DestinationError

    prefix = kafka_broker.topic_prefix()
    source = {"seed": 5, "users": 0, "orders": 40, "rows_per_partition": 5}
    destination = {"type": "kafka", "config": {
        "bootstrap_servers": kafka_broker.bootstrap, "topic": prefix + "{connection}.{stream}",
        "markers_topic": prefix + "commits"}}
    path = connection_file(tmp_path, name="shop", source=source, streams=[
        {"name": "orders", "sync_mode": "incremental", "destination_sync_mode": "append",
         "cursor_field": "updated_at"}], destination=destination,
        checkpoint={"partitions_per_checkpoint": 4, "concurrent_checkpoints": 1})
    write = KafkaDestination._write_commit_marker
    lanes: list[str] = []

    def fails_once(self: KafkaDestination, marker: Any, value: bytes) -> int | None:
        if not lanes:
            lanes.append(marker.app_id)
            raise DestinationError("injected: the driver lost the markers topic")
        return write(self, marker, value)

    monkeypatch.setattr(KafkaDestination, "_write_commit_marker", fails_once)
    monkeypatch.setattr(OrdersStream, "one_task_per_partition", False)
    first = sync_in_process(tmp_path, path)
    assert first.exit_code != 0 and lanes, first.describe()

    settings = KafkaSettings.from_config(destination["config"])
    zombie = Producer(producer_settings(settings, _markers.transactional_id(lanes[0], 3)))
    zombie.init_transactions(30)
    zombie.begin_transaction()
    zombie.produce(prefix + "shop.orders", key=json.dumps({"id": 0}), value=b"{}")
    zombie.flush(10)

    second = sync_in_process(tmp_path, path)
    assert second.exit_code == 0, second.describe()
    with pytest.raises(KafkaException):
        zombie.commit_transaction(30)
    ids = Counter(json.loads(r.key or "")["id"]
                  for r in read_topic(kafka_broker.bootstrap, prefix + "shop.orders"))
    assert ids == Counter(range(source["orders"]))
