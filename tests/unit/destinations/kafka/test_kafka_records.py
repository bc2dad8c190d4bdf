"""What a row becomes in Kafka beyond its JSON: headers, tombstone flags, errors in words."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from headwater.destinations.kafka import _records
from headwater.destinations.kafka._client import describe
from headwater.destinations.kafka._config import KafkaSettings
from headwater.errors import AuthenticationError, DestinationError, ExitCode

SETTINGS = KafkaSettings.from_config({"bootstrap_servers": "kafka.internal:9093"})


def test_headers_carry_the_provenance_of_seed_002() -> None:
    found = _records.headers("orders", "s3://bucket/2024/01.jsonl@etag", "41", "run-1", "3",
                             None)
    assert dict(found) == {"headwater.stream": "orders",
                           "headwater.partition": "s3://bucket/2024/01.jsonl@etag",
                           "headwater.record": "41", "headwater.run_id": "run-1",
                           "headwater.checkpoint": "3"}
    noted = _records.headers("orders", "p", "0", "r", "1", '[{"field":"amount"}]')
    assert dict(noted)["headwater.notes"] == '[{"field":"amount"}]'


def test_the_delete_flag_is_found_by_name() -> None:
    assert _records.deleted_column(["id", "v", "_pg_lsn", "_pg_deleted"]) == "_pg_deleted"
    assert _records.deleted_column(["id", "_hw_deleted"]) == "_hw_deleted"
    assert _records.deleted_column(["id", "deleted"]) is None


def test_a_refused_login_is_an_authentication_error() -> None:
    refused = KafkaException(KafkaError(KafkaError._AUTHENTICATION, "SASL authentication error"))
    error = describe(refused, SETTINGS, "listing the topics")
    assert isinstance(error, AuthenticationError)
    assert error.exit_code == ExitCode.AUTHENTICATION
    assert "kafka.internal:9093" in str(error)


@pytest.mark.parametrize("code", [KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN])
def test_an_unreachable_broker_names_host_and_port(code: int) -> None:
    error = describe(KafkaException(KafkaError(code)), SETTINGS, "listing the topics")
    assert isinstance(error, DestinationError)
    assert "cannot reach the Kafka broker at kafka.internal:9093" in str(error)


def test_a_refusal_seen_by_the_client_first_wins_over_a_timeout() -> None:
    seen = [KafkaError(KafkaError._AUTHENTICATION, "SASL authentication error: bad password")]
    error = describe(KafkaException(KafkaError(KafkaError._TIMED_OUT)), SETTINGS,
                     "listing the topics", seen)
    assert isinstance(error, AuthenticationError)
