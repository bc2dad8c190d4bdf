"""``headwater check`` for Kafka, in plain words, without Spark.

Why ``validate_only``: Kafka can ask the broker to validate a topic's creation
(name, partitions, replicas, configs, the right to create) without creating
it, so a check leaves nothing behind and still says which topic would be
refused, and why, before a sync produces anything.
"""

from __future__ import annotations

import socket
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from headwater.destinations.kafka import _topics
from headwater.destinations.kafka._client import TIMEOUT_S
from headwater.errors import DestinationError

if TYPE_CHECKING:
    from headwater.destinations.kafka._config import KafkaSettings

_CONNECT_TIMEOUT_S = 5.0


def check_cluster(settings: KafkaSettings, topics: Iterable[str]) -> None:
    """The cluster answers (else its host and port are named, or the login's refusal), and
    each of ``topics`` exists or could be created (else the topic is named)."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewTopic

    _answers(settings)
    errors: list[Any] = []
    client = _topics.admin(settings, errors)
    missing = sorted(set(topics) - _topics.existing(settings, client, errors))
    if not missing:
        return
    if not settings.create_topics:
        raise DestinationError(f"Kafka topic {missing[0]} does not exist, and create_topics is "
                               "false: create it, or let Headwater (create_topics: true)",
                               topic=missing[0])
    new = [NewTopic(name, num_partitions=settings.partitions or -1,
                    replication_factor=settings.replication_factor or -1,
                    config=dict(settings.topic_config)) for name in missing]
    futures = client.create_topics(new, validate_only=True, operation_timeout=TIMEOUT_S,
                                   request_timeout=TIMEOUT_S)
    for name, future in futures.items():
        try:
            future.result()
        except KafkaException as exc:
            raise _topics.refused(settings, name, exc, errors) from exc


def _answers(settings: KafkaSettings) -> None:
    """Some bootstrap server accepts a connection, else name the first one.

    librdkafka would retry a refused connection until its timeout; a closed port
    is known at once.
    """
    for server in settings.bootstrap_servers.split(","):
        host, _, port = server.rpartition(":")
        try:
            socket.create_connection((host, int(port)), timeout=_CONNECT_TIMEOUT_S).close()
            return
        except OSError:
            continue
    first, number = settings.first_server()
    raise DestinationError(f"cannot reach the Kafka broker at {first}:{number} (no bootstrap "
                           f"server of {settings.bootstrap_servers} accepts a connection); is "
                           "it running, and is bootstrap_servers right?")


__all__ = ["check_cluster"]
