"""The ``kafka`` source against a real Apache Kafka broker (``scripts/kafka``: one KRaft
node on 127.0.0.1), into Delta and Iceberg in this process (the suite's Spark session).

Records are produced with confluent-kafka in transactions, one of them aborted, so the
offsets a ``read_committed`` consumer sees have gaps; the log start of a partition is
moved with ``DeleteRecords`` so offsets in the state are gone.  Each table is checked
against what was produced: every committed record once, no aborted one.
"""

from __future__ import annotations

import json
import logging
import signal
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from deltalake import DeltaTable

from headwater.connectors.kafka import KafkaSource
from headwater.errors import ConnectorError, ExitCode
from headwater.metadata_store import MetadataStore
from headwater.sdk import PlanContext
from tests._kafka import KafkaBroker
from tests.integration._cli import FAULT
from tests.integration._connections import connection_file
from tests.integration._in_process import run_in_process, sync_in_process

pytestmark = pytest.mark.spark

PARTITIONS = 2


def _topic(broker: KafkaBroker, name: str) -> str:
    topic = f"{broker.topic_prefix()}{name}"
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic(topic, PARTITIONS, 1)]).values():
        future.result()
    return topic


def _produce(broker: KafkaBroker, topic: str, ids: Sequence[int], *,
             abort: bool = False) -> None:
    """``ids`` in one transaction (committed, or written to the log and then aborted)."""
    producer = Producer({"bootstrap.servers": broker.bootstrap,
                         "transactional.id": f"{topic}-{ids[0]}-{abort}"})
    producer.init_transactions()
    producer.begin_transaction()
    for i in ids:
        producer.produce(topic, json.dumps({"id": i, "name": f"n{i}",
                                            "at": "2024-05-01T10:00:00Z"}).encode(),
                         key=str(i).encode(), partition=i % PARTITIONS,
                         headers=[("origin", b"test")])
    if abort:
        producer.flush()  # the records are in the log: aborted, not merely unsent
        producer.abort_transaction()
    else:
        producer.commit_transaction()


def _connection(tmp_path: Path, broker: KafkaBroker, topic: str, *, per_range: int = 1000,
                consumer: dict[str, str] | None = None, **extra: Any) -> Path:
    source = {"bootstrap_servers": broker.bootstrap, "topics": [topic],
              "max_records_per_partition": per_range, "timeout_seconds": 10,
              "consumer": consumer or {}}
    return connection_file(
        tmp_path, name="events", source_type="kafka", source=source,
        streams=[{"name": topic, "sync_mode": "incremental", "destination_sync_mode": "append"}],
        checkpoint={"partitions_per_checkpoint": 1, "concurrent_checkpoints": 2}, **extra)


def _delta_ids(tmp_path: Path, topic: str) -> Counter[int]:
    """The ids in the stream's Delta table, read by delta-rs (no Spark, nothing of ours)."""
    table = DeltaTable(str(tmp_path / "lake" / topic)).to_pyarrow_table(
        columns=["id", "_kafka_key"])
    ids, keys = table.column("id").to_pylist(), table.column("_kafka_key").to_pylist()
    assert keys == [str(i) for i in ids]
    return Counter(ids)


def _ids(stream: Any, plan: Sequence[Any]) -> list[int]:
    """The ids of the records the stream reads in ``plan``'s partitions, sorted."""
    return sorted(r["id"] for p in plan for r in stream.read(p))


def _state(tmp_path: Path, topic: str) -> dict[str, Any] | None:
    return MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}").get_state("events", topic)


def _sync(tmp_path: Path, path: Path, **env: str) -> Any:
    """A sync in this process that must succeed (``env``: faults, :data:`FAULT`)."""
    result = sync_in_process(tmp_path, path, env=env)
    assert result.exit_code == 0, result.describe()
    return result


def test_committed_records_land_once_then_only_new_ones_and_lost_offsets_are_warned(
        spark: Any, tmp_path: Path, kafka_broker: KafkaBroker,
        caplog: pytest.LogCaptureFixture) -> None:
    topic = _topic(kafka_broker, "orders")
    _produce(kafka_broker, topic, range(0, 200))
    _produce(kafka_broker, topic, range(1000, 1040), abort=True)
    _produce(kafka_broker, topic, range(200, 300))
    path = _connection(tmp_path, kafka_broker, topic)
    _sync(tmp_path, path)
    assert _delta_ids(tmp_path, topic) == Counter(range(300)), "each committed once"
    # 150 records, 20 aborted and three markers per partition: the ends are past 170
    state = _state(tmp_path, topic)
    assert state is not None and set(state["offsets"]) == {"0", "1"} and "done" not in state
    assert all(int(o) >= 173 for o in state["offsets"].values())

    # More arrive; partition 0 loses its oldest offsets, some never read, to retention.
    _produce(kafka_broker, topic, range(300, 400))
    _produce(kafka_broker, topic, range(2000, 2010), abort=True)
    next_0 = int(state["offsets"]["0"])
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap})
    for future in admin.delete_records([TopicPartition(topic, 0, next_0 + 10)]).values():
        future.result()
    lost = {300 + 2 * k for k in range(10)}  # the first ten new records of partition 0
    second = _sync(tmp_path, path)
    said = " ".join(second.stderr.split())  # the CLI's log, as wrapped for a terminal
    assert f"topic {topic} partition 0: offsets {next_0} to {next_0 + 9} were deleted" in said, \
        second.describe()
    assert _delta_ids(tmp_path, topic) == Counter(set(range(400)) - lost)
    after = _state(tmp_path, topic)
    assert after is not None and int(after["offsets"]["0"]) > next_0 + 10
    # The next plan from that state reads nothing, and warns no more.
    stream = KafkaSource(yaml.safe_load(path.read_text())["source"]["config"]).streams()[0]
    with caplog.at_level(logging.WARNING, logger="headwater.connectors.kafka"):
        assert stream.plan(after, PlanContext(incremental=True)) == []
    assert not [r for r in caplog.records if "were deleted" in r.getMessage()]


def test_killed_after_a_commit_before_its_state_then_resumed_lands_each_record_once(
        spark: Any, tmp_path: Path, kafka_broker: KafkaBroker) -> None:
    topic = _topic(kafka_broker, "killed")
    _produce(kafka_broker, topic, range(0, 150))
    _produce(kafka_broker, topic, range(1000, 1030), abort=True)
    _produce(kafka_broker, topic, range(150, 300))
    path = _connection(tmp_path, kafka_broker, topic, per_range=80)
    killed = sync_in_process(tmp_path, path, env={FAULT: "after-commit:2"})
    assert killed.exit_code == -signal.SIGKILL, killed.describe()
    landed = _delta_ids(tmp_path, topic)
    assert 0 < sum(landed.values()) < 300  # two checkpoints landed, the second's state not
    # The resumed attempt's lookup of earlier commits is blinded: the checkpoint whose
    # state was lost is read from Kafka again and committed again, with the same rows and
    # marker, and Delta's txnAppId/txnVersion keep it once.
    resumed = _sync(tmp_path, path, **{FAULT: "blind-lookup"})
    run = resumed.document["runs"][0]
    assert run["resumed"] is True, resumed.describe()
    store = MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}")
    retried = [c for c in store.list_checkpoints(run["run_id"])
               if c.stats.get("already_committed")]
    assert retried, "the checkpoints whose state was lost were committed again"
    assert _delta_ids(tmp_path, topic) == Counter(range(300)), "none missing, none twice"
    state = _state(tmp_path, topic)
    assert state is not None and "done" not in state


def test_the_same_records_land_in_iceberg(spark: Any, tmp_path: Path,
                                          kafka_broker: KafkaBroker) -> None:
    from tests.integration.destinations.iceberg._catalogs import iceberg_config, load_table

    topic = _topic(kafka_broker, "iceberg")
    _produce(kafka_broker, topic, range(0, 100))
    _produce(kafka_broker, topic, range(1000, 1020), abort=True)
    _produce(kafka_broker, topic, range(100, 200))
    config = iceberg_config(tmp_path)
    path = _connection(tmp_path, kafka_broker, topic,
                       destination={"type": "iceberg", "config": config})
    _sync(tmp_path, path)
    table = load_table(config, topic).scan(
        selected_fields=("id", "_kafka_partition", "_kafka_offset")).to_arrow()
    assert Counter(table.column("id").to_pylist()) == Counter(range(200))
    keys = set(zip(table.column("_kafka_partition").to_pylist(),
                   table.column("_kafka_offset").to_pylist(), strict=True))
    assert len(keys) == 200


def test_a_range_read_twice_gives_the_same_records_and_read_committed_skips_aborted_ones(
        kafka_broker: KafkaBroker) -> None:
    topic = _topic(kafka_broker, "twice")
    _produce(kafka_broker, topic, range(0, 20))
    _produce(kafka_broker, topic, range(1000, 1010), abort=True)
    _produce(kafka_broker, topic, range(20, 40))
    config = {"bootstrap_servers": kafka_broker.bootstrap, "topics": [topic],
              "max_records_per_partition": 1000}

    def read(isolation: str) -> list[list[Any]]:
        """Each partition's records, each partition read twice."""
        stream = KafkaSource({**config, "isolation_level": isolation}).streams()[0]
        plan = stream.plan(None, PlanContext(incremental=True))
        return [list(stream.read(p)) for p in plan for _ in range(2)]

    first, again, *rest = read("read_committed")
    assert first == again and rest[0] == rest[1]
    committed = sorted(r["id"] for r in [*first, *rest[0]])
    assert committed == list(range(40))
    offsets = [r["_kafka_offset"] for r in first]
    assert offsets != list(range(offsets[0], offsets[0] + len(offsets))), "gaps: markers"
    everything = read("read_uncommitted")
    assert sorted(r["id"] for r in [*everything[0], *everything[2]]) == \
        sorted([*range(40), *range(1000, 1010)])


def test_offsets_deleted_after_the_plan_are_warned_and_the_read_goes_on(
        kafka_broker: KafkaBroker, caplog: pytest.LogCaptureFixture) -> None:
    topic = _topic(kafka_broker, "gone")
    _produce(kafka_broker, topic, range(0, 40))  # partition 0: ids 0, 2, ... at offsets 0..19
    stream = KafkaSource({"bootstrap_servers": kafka_broker.bootstrap, "topics": [topic],
                          "sample_records": 0}).streams()[0]
    plan = stream.plan(None, PlanContext(incremental=True))
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap})
    for future in admin.delete_records([TopicPartition(topic, 0, 5)]).values():
        future.result()
    with caplog.at_level(logging.WARNING, logger="headwater.connectors.kafka"):
        ids = _ids(stream, plan)
    assert ids == sorted(set(range(40)) - {0, 2, 4, 6, 8})
    assert f"topic {topic} partition 0: offsets 0 to 4 were deleted" in caplog.text


def test_start_latest_reads_only_what_comes_after_the_first_sync(
        kafka_broker: KafkaBroker) -> None:
    topic = _topic(kafka_broker, "latest")
    _produce(kafka_broker, topic, range(0, 20))
    stream = KafkaSource({"bootstrap_servers": kafka_broker.bootstrap, "topics": [topic],
                          "start": "latest", "sample_records": 0}).streams()[0]
    first = stream.plan(None, PlanContext(incremental=True))
    assert len(first) == PARTITIONS and _ids(stream, first) == []  # empty ranges at the ends
    cursor = stream.cursor(None, True)
    for partition in first:
        cursor.close_partition(partition)
    state = cursor.state()
    assert state is not None and set(state["offsets"]) == {"0", "1"}
    _produce(kafka_broker, topic, range(20, 30))
    assert _ids(stream, stream.plan(state, PlanContext(incremental=True))) == list(range(20, 30))
    # a full refresh reads all the topic holds, whatever start says
    assert _ids(stream, stream.plan(None, PlanContext(incremental=False))) == list(range(30))


def test_check_names_the_unreachable_broker_and_the_missing_topic(
        kafka_broker: KafkaBroker) -> None:
    with pytest.raises(ConnectorError, match=r"127\.0\.0\.1:1\b.*Connection refused"):
        KafkaSource({"bootstrap_servers": "127.0.0.1:1", "topics": ["t"],
                     "timeout_seconds": 5}).check()
    with pytest.raises(ConnectorError, match="has no topic 'no-such-topic'"):
        KafkaSource({"bootstrap_servers": kafka_broker.bootstrap,
                     "topics": ["no-such-topic"]}).check()


def test_refused_sasl_fails_check_with_exit_code_3(
        tmp_path: Path, kafka_broker: KafkaBroker) -> None:
    # The test broker has no SASL listener: it refuses the SASL handshake itself, which
    # librdkafka reports as an authentication failure (a wrong password would too).
    password = "kafka-secret-4711"
    path = _connection(tmp_path, kafka_broker, "refused", consumer={
        "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
        "sasl.username": "headwater", "sasl.password": password})
    result = run_in_process(tmp_path, "check", str(path))
    assert result.exit_code == ExitCode.AUTHENTICATION, result.describe()
    assert "refused the credentials" in " ".join((result.stdout + result.stderr).split())
    # (librdkafka never quotes the password; the spec marks it secret: the unit tests)
    assert password not in result.stdout + result.stderr


def test_a_topic_pattern_finds_its_topics_and_the_sample_types_their_fields(
        kafka_broker: KafkaBroker) -> None:
    prefix = kafka_broker.topic_prefix()
    admin = AdminClient({"bootstrap.servers": kafka_broker.bootstrap})
    for future in admin.create_topics([NewTopic(f"{prefix}{name}", 1, 1)
                                       for name in ("a", "b", "other")]).values():
        future.result()
    _produce(kafka_broker, f"{prefix}a", [0])
    source = KafkaSource({"bootstrap_servers": kafka_broker.bootstrap,
                          "topic_pattern": f"{prefix}(a|b)",
                          "schema": {f"{prefix}a": {"name": {"type": "integer"}}}})
    streams = source.streams()
    assert [s.stream_name for s in streams] == [f"{prefix}a", f"{prefix}b"]
    sampled = streams[0].json_schema()["properties"]
    assert sampled["at"] == {"type": ["null", "string"], "format": "date-time"}
    assert sampled["id"] == {"type": ["null", "integer"]}
    assert sampled["name"] == {"type": "integer"}  # declared wins over sampled
    assert set(streams[1].json_schema()["properties"]) == {  # nothing to sample
        "_kafka_topic", "_kafka_partition", "_kafka_offset", "_kafka_timestamp", "_kafka_key",
        "_kafka_headers"}
