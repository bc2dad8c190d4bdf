"""The Kafka destination's config: defaults, topic templates, secrets, refusals naming the
field and the shape expected."""

from __future__ import annotations

import pytest

from headwater.config import mask, redact
from headwater.destinations import build_destination
from headwater.destinations.kafka import KafkaDestination
from headwater.destinations.kafka._client import producer_settings, reader_settings
from headwater.destinations.kafka._config import KafkaSettings, spec
from headwater.errors import ConfigError, SpecValidationError

BASE = {"bootstrap_servers": "broker-1:9092,broker-2:9092"}


def test_defaults_name_the_topic_after_the_stream_and_the_markers_topic() -> None:
    destination = build_destination("kafka", BASE)
    assert isinstance(destination, KafkaDestination)
    assert destination.table_location("users") == "users"
    assert destination.settings.markers_topic == "_headwater_commits"
    assert destination.settings.create_topics is True
    assert destination.dataset_namespace() == "kafka://broker-1:9092"
    assert destination.dataset_name("users", "kafka://broker-1:9092") == "users"


def test_the_topic_template_takes_the_connection_and_the_namespace() -> None:
    destination = KafkaDestination({**BASE, "topic": "{connection}.{namespace}.{stream}"})
    destination.use_connection("shop", lambda stream: "public")
    assert destination.table_location("orders") == "shop.public.orders"


@pytest.mark.parametrize(("topic", "says"), [
    ("{table}", "names {table}"),
    ("raw {stream}", "not a Kafka topic name"),
    ("{stream", "is not a template"),
])
def test_a_bad_topic_template_names_the_field(topic: str, says: str) -> None:
    with pytest.raises(ConfigError, match=r"destination\.config\.topic") as raised:
        KafkaDestination({**BASE, "topic": topic}).table_location("users")
    assert says in str(raised.value)


def test_avro_is_refused_with_the_reason() -> None:
    with pytest.raises(ConfigError, match="value_format: avro is not supported") as raised:
        KafkaDestination({**BASE, "value_format": "avro",
                          "schema_registry_url": "http://registry:8081"})
    assert "expected json" in str(raised.value)


@pytest.mark.parametrize(("config", "field"), [
    ({"bootstrap_servers": "no-port"}, "bootstrap_servers"),
    ({**BASE, "partitions": 0}, "partitions"),
    ({**BASE, "value_format": "xml"}, "value_format"),
    ({**BASE, "producer": {"linger.ms": ["5"]}}, "producer"),
    ({**BASE, "unknown": 1}, "unknown"),
])
def test_the_spec_refuses_a_bad_shape_naming_the_field(config: dict[str, object],
                                                       field: str) -> None:
    with pytest.raises(SpecValidationError) as raised:
        build_destination("kafka", config)
    assert field in str(raised.value)


def test_settings_headwater_owns_are_refused() -> None:
    with pytest.raises(ConfigError, match=r"transactional\.id cannot be set"):
        KafkaSettings.from_config({**BASE, "producer": {"transactional.id": "mine"}})


def test_producer_secrets_are_redacted_and_masked() -> None:
    config = {**BASE, "producer": {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                                   "sasl.username": "app", "sasl.password": "hunter2-kafka",
                                   "ssl.custom.secret.token": "tok-zzz-123"}}
    assert redact(config, spec())["producer"]["sasl.password"] == "**********"
    build_destination("kafka", config)
    assert "hunter2-kafka" not in mask("login failed with hunter2-kafka")
    assert "tok-zzz-123" not in mask("tok-zzz-123")


def test_security_settings_reach_every_client_and_tuning_only_the_producer() -> None:
    settings = KafkaSettings.from_config({**BASE, "producer": {
        "security.protocol": "SASL_PLAINTEXT", "sasl.username": "u", "linger.ms": 50}})
    producer = producer_settings(settings, "lane/task-0")
    reader = reader_settings(settings)
    assert producer["linger.ms"] == "50" and producer["transactional.id"] == "lane/task-0"
    assert producer["enable.idempotence"] == "true"
    assert reader["security.protocol"] == "SASL_PLAINTEXT" and reader["sasl.username"] == "u"
    assert reader["isolation.level"] == "read_committed" and "linger.ms" not in reader


def test_history_is_refused_before_any_topic_is_touched() -> None:
    from headwater.plan import ConfiguredStream, StreamPlan
    from headwater.sync_modes import DestinationSyncMode, SyncMode

    stream = ConfiguredStream(name="users", sync_mode=SyncMode.INCREMENTAL,
                              destination_sync_mode=DestinationSyncMode.HISTORY,
                              cursor_field="updated_at", primary_key=("id",))
    plan = StreamPlan(stream=stream, state_before=None, lanes=1, checkpoints=())
    # No broker at BASE's address: a refusal that reached one would fail otherwise.
    with pytest.raises(ConfigError, match="cannot keep history") as raised:
        KafkaDestination(BASE).prepare(None, plan, None)  # type: ignore[arg-type]
    assert "use append" in str(raised.value).lower()
