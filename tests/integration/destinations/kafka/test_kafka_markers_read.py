"""Reading the markers while a killed attempt's transaction is still open on them: a
read_committed consumer's end (the last stable offset) stops before that transaction, so
a marker committed after it must still be found, once the zombie is fenced (no Spark)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from confluent_kafka import Producer

from headwater.destinations.kafka import _markers, _topics
from headwater.destinations.kafka._client import producer_settings
from headwater.destinations.kafka._config import KafkaSettings
from headwater.errors import DestinationError


def test_a_marker_committed_after_an_open_transaction_is_read_once_the_zombie_is_fenced(
        kafka_broker: Any) -> None:
    settings = KafkaSettings.from_config({"bootstrap_servers": kafka_broker.bootstrap,
                                          "markers_topic": kafka_broker.topic_prefix() + "m"})
    _topics.ensure(settings, {settings.markers_topic: _topics.MARKERS_CONFIG},
                   partitions={settings.markers_topic: 1})
    zombie_id = f"zombie-{uuid.uuid4().hex}"
    zombie = Producer(producer_settings(settings, zombie_id))
    zombie.init_transactions(30)
    zombie.begin_transaction()
    zombie.produce(settings.markers_topic, key="task/lane/0", value=b'{"version":1}')
    zombie.flush(10)  # produced, never committed: a task killed before its commit
    other = Producer(producer_settings(settings, f"other-{uuid.uuid4().hex}"))
    other.init_transactions(30)
    other.begin_transaction()
    other.produce(settings.markers_topic, key="task/lane/1", value=b'{"version":1}')
    other.commit_transaction(30)

    assert _markers.open_transactions(settings)
    # Not a partial answer (the committed marker lies past the open transaction)...
    with pytest.raises(DestinationError, match="still open on the markers topic"):
        _markers.read_markers(settings, "task/lane/", wait_s=2)
    # ...but the whole one once the zombie is fenced.
    _markers.fence(settings, [zombie_id])
    assert _markers.read_markers(settings, "task/lane/", wait_s=30) == {
        "task/lane/1": {"version": 1}}
    assert not _markers.open_transactions(settings)
