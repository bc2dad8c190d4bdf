"""The Kafka source's config (what it refuses, which settings are secrets) and how one
record becomes one row (JSON or raw values, provenance columns, notes)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from typer.testing import CliRunner

from headwater.cli.app import app
from headwater.config import secret_paths
from headwater.connectors import get_source_class
from headwater.connectors.kafka import KafkaSource
from headwater.connectors.kafka._cluster import explain
from headwater.connectors.kafka._config import KafkaConfig
from headwater.connectors.kafka._decode import to_record
from headwater.errors import (
    AuthenticationError,
    ConfigError,
    ConnectorError,
    ExitCode,
    SpecValidationError,
)

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "kafka-source.yaml"
BASE = {"bootstrap_servers": "127.0.0.1:9092"}


def test_kafka_is_a_built_in_source() -> None:
    assert get_source_class("kafka") is KafkaSource


@pytest.mark.parametrize(("config", "problem"), [
    ({}, "either topics"),
    ({"topics": ["a"], "topic_pattern": "a.*"}, "not both"),
    ({"topic_pattern": "("}, "not a regular expression"),
    ({"topics": []}, "at least 1"),
    ({"topics": ["a"], "consumer": {"isolation.level": "read_uncommitted"}},
     "set isolation_level instead"),
    ({"topics": ["a"], "consumer": {"enable.auto.commit": True}}, "sets it itself"),
    ({"topics": ["a"], "max_records_per_partition": 0}, "greater than or equal to 1"),
    ({"topics": ["a"], "start": "middle"}, "earliest"),
])
def test_config_errors_name_the_problem(config: dict[str, Any], problem: str) -> None:
    with pytest.raises(SpecValidationError) as excinfo:
        KafkaSource({**BASE, **config})
    assert problem in str(excinfo.value)


@pytest.mark.parametrize(("config", "field", "problem"), [
    ({"topics": ["orders"], "value_format": "raw", "schema": {"orders": {"n": {}}}},
     "schema", "with value_format: raw each value lands whole in the column 'value'"),
    ({"topics": ["orders"], "schema": {"order": {"n": {}}}},
     "schema.order", "topic 'order' is not one of topics (orders)"),
    ({"topic_pattern": r"shop\..*", "schema": {"orders": {"n": {}}}},
     "schema.orders", "topic 'orders' does not match topic_pattern"),
])
def test_a_declared_schema_no_stream_reads_is_refused(config: dict[str, Any], field: str,
                                                      problem: str) -> None:
    # It was accepted and never used: the stream's fields stayed the sampled ones.
    with pytest.raises(ConfigError) as info:
        KafkaSource({**BASE, **config})
    assert info.value.context["field"] == f"source.config.{field}"
    assert problem in info.value.message


def test_a_declared_schema_of_a_stream_is_taken() -> None:
    KafkaSource({**BASE, "topics": ["orders"], "schema": {"orders": {"n": {}}}})
    KafkaSource({**BASE, "topic_pattern": r"shop\..*", "schema": {"shop.orders": {"n": {}}}})


def test_credentials_among_the_consumer_settings_are_secrets() -> None:
    paths = secret_paths(KafkaSource.spec())
    assert ("consumer", "sasl.password") in paths
    assert ("consumer", "ssl.key.password") in paths
    assert ("consumer", "sasl.username") not in paths


def test_lineage_names_the_first_broker_as_openlineage_does() -> None:
    from headwater.observability.lineage._namespaces import source_namespace

    assert source_namespace("kafka", {"bootstrap_servers": " b1:9092, b2:9092"}) == \
        "kafka://b1:9092"


def test_the_example_connection_validates(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["validate", str(EXAMPLE)],
                                env={"HEADWATER_HOME": str(tmp_path)})
    assert result.exit_code == 0, result.output


def _record(value: bytes | None, *, value_format: str = "json", encoding: str = "text",
            key: bytes | None = b"k1", headers: Any = None) -> dict[str, Any]:
    return to_record("orders", 2, 41, 1_700_000_000_123, key, value, headers,
                     value_format=value_format, encoding=encoding)  # type: ignore[arg-type]


def test_a_json_object_becomes_its_fields_with_where_it_came_from() -> None:
    row = _record(b'{"id": 7, "amount": 12.50}', headers=[("trace", b"abc"), ("trace", None)])
    assert row["id"] == 7 and str(row["amount"].text) == "12.50"  # the literal is kept
    assert (row["_kafka_topic"], row["_kafka_partition"], row["_kafka_offset"]) == \
        ("orders", 2, 41)
    assert row["_kafka_timestamp"] == datetime(2023, 11, 14, 22, 13, 20, 123000, tzinfo=UTC)
    assert row["_kafka_key"] == "k1"
    assert row["_kafka_headers"] == [{"key": "trace", "value": "abc"},
                                     {"key": "trace", "value": None}]
    assert "_hw_notes" not in row


@pytest.mark.parametrize(("value", "reason"), [
    (b"not json", "not JSON"),
    (b"[1, 2]", "JSON list, not an object"),
    (b"\xff\xfe{", "not JSON"),
])
def test_a_value_that_is_not_an_object_is_kept_with_a_note(value: bytes, reason: str) -> None:
    row = _record(value)
    assert row["_kafka_offset"] == 41 and "id" not in row
    assert reason in row["_hw_notes"][0]["reason"]


def test_a_tombstone_is_a_row_of_provenance_only() -> None:
    row = _record(None)
    assert row["_kafka_key"] == "k1" and "_hw_notes" not in row
    assert set(row) == {"_kafka_topic", "_kafka_partition", "_kafka_offset", "_kafka_timestamp",
                        "_kafka_key", "_kafka_headers"}


def test_raw_values_land_as_text_or_bytes() -> None:
    assert _record(b"plain", value_format="raw")["value"] == "plain"
    row = _record(b"\xff\x00", value_format="raw", encoding="bytes", key=b"\x01")
    assert row["value"] == b"\xff\x00" and row["_kafka_key"] == b"\x01"
    assert "_hw_notes" not in row
    bad = _record(b"\xff\x00", value_format="raw")
    assert bad["value"] is None and "raw_encoding: bytes" in bad["_hw_notes"][0]["reason"]


@pytest.mark.parametrize(("code", "kind", "words"), [
    (KafkaError.SASL_AUTHENTICATION_FAILED, AuthenticationError, "refused the credentials"),
    (KafkaError._AUTHENTICATION, AuthenticationError, "refused the credentials"),
    (KafkaError._TRANSPORT, ConnectorError, "cannot reach Kafka at 127.0.0.1:9092"),
    (KafkaError.UNKNOWN_TOPIC_OR_PART, ConnectorError, "UNKNOWN_TOPIC_OR_PART"),
])
def test_cluster_errors_become_errors_a_person_can_act_on(
        code: int, kind: type[Exception], words: str) -> None:
    settings = KafkaConfig.model_validate({**BASE, "topics": ["a"]})
    error = explain(KafkaException(KafkaError(code, "the broker said no")), settings)
    assert type(error) is kind and words in str(error)
    if kind is AuthenticationError:
        assert error.exit_code == ExitCode.AUTHENTICATION


@pytest.mark.parametrize(("code", "fatal"), [
    (KafkaError._TRANSPORT, False),          # a broker restarting: librdkafka retries
    (KafkaError.NOT_LEADER_FOR_PARTITION, False),
    (KafkaError.UNKNOWN_TOPIC_OR_PART, True),
    (KafkaError.TOPIC_AUTHORIZATION_FAILED, True),
])
def test_a_read_fails_only_on_errors_waiting_cannot_cure(code: int, fatal: bool) -> None:
    from headwater.connectors.kafka._reader import _fatal

    assert _fatal(KafkaError(code)) is fatal


def test_a_backfill_window_is_refused_in_the_streams_own_words() -> None:
    from headwater.connectors.kafka import KafkaStream
    from headwater.engine._rerun import window_bounds
    from headwater.errors import ConfigError

    stream = KafkaStream(KafkaConfig.model_validate({**BASE, "topics": ["a"]}), "a")
    with pytest.raises(ConfigError, match="offset ranges per topic partition"):
        stream.window_partitions(*window_bounds(stream, 0, 10))
