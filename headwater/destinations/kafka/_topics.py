"""Topics: find them, create the missing ones, and say plainly why one cannot be.

Why the markers topic is made here with settings of its own: it must be
compacted (the latest marker of a key is the answer) and must keep every key
for good, so it gets ``cleanup.policy=compact`` and no retention of its own,
whatever ``topic_config`` says for the streams' topics.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from headwater.destinations.kafka._client import TIMEOUT_S, connection_settings, describe
from headwater.errors import AuthenticationError, DestinationError, HeadwaterError

if TYPE_CHECKING:
    from headwater.destinations.kafka._config import KafkaSettings

#: The markers topic's configs: compacted, cleaned early so a reader scans little.
MARKERS_CONFIG = {"cleanup.policy": "compact", "segment.ms": "3600000",
                  "min.cleanable.dirty.ratio": "0.1"}


def stream_topic_config(settings: KafkaSettings, *, compacted: bool) -> dict[str, str]:
    """A stream's topic's configs: the user's, and ``compact`` for an ``append_dedup`` one."""
    config = dict(settings.topic_config)
    if compacted:
        config.setdefault("cleanup.policy", "compact")
    return config


def admin(settings: KafkaSettings, errors: list[Any]) -> Any:
    from confluent_kafka.admin import AdminClient

    conf: dict[str, Any] = {**connection_settings(settings), "error_cb": errors.append}
    return AdminClient(conf)


def existing(settings: KafkaSettings, client: Any, errors: list[Any]) -> set[str]:
    """The cluster's topics (an unreachable broker names its host and port)."""
    from confluent_kafka import KafkaException

    try:
        return set(client.list_topics(timeout=TIMEOUT_S).topics)
    except KafkaException as exc:
        raise describe(exc, settings, "listing the topics", errors) from exc


def ensure(settings: KafkaSettings, wanted: Mapping[str, Mapping[str, str]], *,
           partitions: Mapping[str, int] | None = None) -> list[str]:
    """Create each topic of ``wanted`` (name -> configs) the cluster lacks; the created.

    With ``create_topics: false`` a missing topic is an error naming it.  A topic
    the broker refuses (an invalid name, more replicas than brokers, no right to
    create) is an error naming the topic and the broker's reason.
    """
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import NewTopic

    errors: list[Any] = []
    client = admin(settings, errors)
    missing = sorted(set(wanted) - existing(settings, client, errors))
    if not missing:
        return []
    if not settings.create_topics:
        raise DestinationError(f"Kafka topic {missing[0]} does not exist, and create_topics is "
                               "false: create it, or let Headwater (create_topics: true)",
                               topic=missing[0])
    new = [NewTopic(name, num_partitions=(partitions or {}).get(name, settings.partitions or -1),
                    replication_factor=settings.replication_factor or -1,
                    config=dict(wanted[name])) for name in missing]
    futures = client.create_topics(new, operation_timeout=TIMEOUT_S, request_timeout=TIMEOUT_S)
    for name, future in futures.items():
        try:
            future.result()
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            if error is not None and error.code() == error.TOPIC_ALREADY_EXISTS:
                continue  # another writer created it meanwhile
            raise refused(settings, name, exc, errors) from exc
    return missing


def refused(settings: KafkaSettings, topic: str, exc: BaseException,
            errors: list[Any]) -> HeadwaterError:
    """Why the broker would not create ``topic``, naming it."""
    found = describe(exc, settings, f"creating topic {topic}", errors, topic=topic)
    if isinstance(found, AuthenticationError) or "cannot reach" in found.message:
        return found
    host, port = settings.first_server()
    reason = exc.args[0].str() if exc.args and hasattr(exc.args[0], "str") else str(exc)
    return DestinationError(f"the Kafka cluster at {host}:{port} refused to create topic "
                            f"{topic}: {reason}", topic=topic)


__all__ = ["MARKERS_CONFIG", "ensure", "existing", "stream_topic_config"]
