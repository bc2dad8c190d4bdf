"""Reading one offset range ``[from, upto)`` of one topic partition, on an executor.

The consumer is *assigned* the partition at ``from`` (no subscription, no consumer
group, nothing committed anywhere: the offsets live in Headwater's state), and the
read stops when the consumer's position reaches ``upto``, never after a count of
records: with ``read_committed``, aborted records and transaction markers take
offsets without being delivered, and compaction removes records but not their
offsets, so a range of N offsets holds N records or fewer.  A record at or past
``upto`` belongs to the next range and is not yielded; the end-of-partition event
(at the last stable offset for ``read_committed``) also moves the position.

Offsets are immutable, so reading the same range again yields the same records:
a retried checkpoint lands the same rows.  Offsets the log no longer holds
(retention or ``DeleteRecords`` moved its start past ``from``) are logged as a
warning naming the topic partition and the lost offsets, and the read goes on
from the log's start.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

from confluent_kafka import Consumer, KafkaError, Message, TopicPartition

from headwater.connectors.kafka._cluster import AUTH_CODES, explain
from headwater.connectors.kafka._config import KafkaConfig
from headwater.errors import ConnectorError

__all__ = ["read_range"]

log = logging.getLogger(__name__)

#: Records asked of librdkafka at a time (it fetches ahead in the background anyway).
_BATCH = 1000
#: Seconds one consume() waits for its records.
_WAIT_S = 0.1
_FATAL_CODES = AUTH_CODES | {KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION,
                             KafkaError._UNKNOWN_TOPIC}
_OUT_OF_RANGE = {KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE}


def read_range(settings: KafkaConfig, topic: str, partition: int, start: int,
               upto: int) -> Iterator[Message]:
    """The records of ``topic``'s ``partition`` from offset ``start`` up to ``upto``
    (excluded), in offset order (see the module docstring)."""
    if start >= upto:
        return
    consumer = Consumer(settings.consumer_settings())
    try:
        consumer.assign([TopicPartition(topic, partition, start)])
        position, progress_at = start, time.monotonic()
        while position < upto:
            # consume() waits for all it asked or the timeout: a range whose last offsets
            # are markers or aborted records never delivers all, so the wait is short.
            messages = consumer.consume(num_messages=min(_BATCH, upto - position),
                                        timeout=_WAIT_S)
            before = position
            for message in messages:
                error, offset = message.error(), int(message.offset() or 0)
                if error is not None and error.code() == KafkaError._PARTITION_EOF:
                    position = max(position, offset)
                elif error is not None and error.code() in _OUT_OF_RANGE:
                    position = _skip_lost(consumer, settings, topic, partition, position, upto)
                elif error is not None and _fatal(error):
                    raise explain(error, settings, stream=topic)
                elif error is not None:
                    # librdkafka retries by itself (a broker restarting, a leader moving);
                    # a read that stops progressing fails on the timeout below instead.
                    log.info("%s partition %d at offset %d: %s", topic, partition, position,
                             error.str())
                elif offset >= upto:
                    position = upto
                elif offset < position:
                    continue  # fetched before a seek: a record is never yielded twice
                else:
                    yield message
                    position = offset + 1
                if position >= upto:
                    break
            now = time.monotonic()
            if position > before:
                progress_at = now
            elif now - progress_at > settings.timeout_seconds:
                raise ConnectorError(
                    f"reading {topic} partition {partition} stopped at offset {position}, "
                    f"before {upto}: nothing arrived in {settings.timeout_seconds:g} s (was the "
                    "topic deleted and created again?)", stream=topic)
    finally:
        consumer.close()


def _fatal(error: KafkaError) -> bool:
    """Whether waiting cannot cure ``error``: refused credentials or rights, a topic or
    partition that does not exist, or what librdkafka itself calls fatal."""
    return bool(error.fatal()) or error.code() in _FATAL_CODES


def _skip_lost(consumer: Consumer, settings: KafkaConfig, topic: str, partition: int,
               position: int, upto: int) -> int:
    """Where to read on once offsets from ``position`` on are gone from the log."""
    try:
        low, _ = consumer.get_watermark_offsets(TopicPartition(topic, partition),
                                                timeout=settings.timeout_seconds)
    except Exception as exc:
        raise explain(exc, settings, stream=topic) from exc
    if low <= position:
        raise ConnectorError(f"{topic} partition {partition}: offset {position} is out of range "
                             f"though the log starts at {low}", stream=topic)
    log.warning("topic %s partition %d: offsets %d to %d were deleted (retention or "
                "compaction) before they were read; they are lost to this sync", topic, partition,
                position, min(low, upto) - 1)
    if low < upto:
        consumer.assign([TopicPartition(topic, partition, low)])
    return low
