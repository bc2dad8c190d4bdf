"""``headwater verify`` on the Kafka destination: a topic is a log, not a table, so the
stream is not compared and says why (exit code 4, as a source that cannot count).  No
broker and no Spark: the refusal comes before either is reached."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from headwater.config import load_connection
from headwater.destinations.kafka import KafkaDestination
from headwater.engine import SyncEngine
from headwater.errors import NoTableError
from headwater.metadata_store import MetadataStore
from headwater.operations._verify import WindowChoice, verify

KAFKA = {"bootstrap_servers": "127.0.0.1:9", "topic": "shop.{stream}"}


def test_the_kafka_destination_keeps_no_table() -> None:
    with pytest.raises(NoTableError, match=re.escape(
            "the kafka destination keeps no table: topic shop.users is a log")):
        KafkaDestination(KAFKA).read_table(None, "users")  # type: ignore[arg-type]


def test_verify_says_it_cannot_verify_a_kafka_stream(tmp_path: Path) -> None:
    path = tmp_path / "k.yaml"
    path.write_text(yaml.safe_dump({
        "name": "k", "source": {"type": "sample", "config": {"seed": 1, "users": 10}},
        "destination": {"type": "kafka", "config": KAFKA},
        "streams": [{"name": "users", "sync_mode": "incremental",
                     "destination_sync_mode": "append"}],
        "metadata_store": f"sqlite:///{tmp_path / 'meta.db'}"}))
    connection = load_connection(path)
    engine = SyncEngine(connection, MetadataStore(connection.metadata_store or ""))
    report = verify(engine, None,  # type: ignore[arg-type]
                    choice=WindowChoice(start="2024-01-01", end="2024-01-02"))
    [stream] = report.streams
    assert stream.cannot is not None
    assert stream.cannot.startswith("the kafka destination keeps no table: topic ")
    assert not stream.windows
    assert report.exit_code == 4 and report.to_dict()["status"] == "incomplete"
