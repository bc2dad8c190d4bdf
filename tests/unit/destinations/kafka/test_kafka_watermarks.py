"""Watermarks asked again while a partition's leader is not known yet.

CI saw a commit reported as of unknown outcome because the markers topic, created a
moment before, answered ``Not leader for partition`` to the first watermark query.
The broker's race cannot be staged on one KRaft node, so a consumer stands in for it
here; the real broker is in ``tests/integration/destinations/kafka``.
"""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from headwater.destinations.kafka._markers import watermarks


class Answers:
    """A consumer whose watermark queries fail with ``errors`` first, then answer."""

    def __init__(self, *errors: int) -> None:
        self.errors = list(errors)
        self.asked = 0

    def get_watermark_offsets(self, partition: Any, timeout: float,
                              cached: bool) -> tuple[int, int]:
        self.asked += 1
        if self.errors:
            raise KafkaException(KafkaError(self.errors.pop(0)))
        return (0, 7)


def test_a_partition_without_a_known_leader_is_asked_again() -> None:
    consumer = Answers(KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE)
    assert watermarks(consumer, TopicPartition("markers", 0)) == (0, 7)
    assert consumer.asked == 3


def test_any_other_error_is_raised_at_once() -> None:
    consumer = Answers(KafkaError.TOPIC_AUTHORIZATION_FAILED)
    with pytest.raises(KafkaException):
        watermarks(consumer, TopicPartition("markers", 0))
    assert consumer.asked == 1
