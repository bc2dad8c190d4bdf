"""Reading a topic back as a consumer does, through a client of the test's own.

A read_committed consumer (confluent-kafka's, configured here, not Headwater's
reader) from the start of every partition to its end; a compacted topic is read
as its consumers see it once the cleaner has run: the last record of each key,
tombstones removing the key.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

import pyarrow as pa


@dataclass(frozen=True)
class Record:
    key: str | None
    value: str | None
    headers: dict[str, str]
    partition: int
    offset: int


def read_topic(bootstrap: str, topic: str, *, isolation: str = "read_committed",
               timeout: float = 20.0) -> list[Record]:
    """Every record of ``topic`` a consumer of ``isolation`` sees, in partition order."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "test-reader",
                         "isolation.level": isolation, "enable.auto.commit": "false",
                         "enable.partition.eof": "true"})
    try:
        meta = consumer.list_topics(topic, timeout=timeout).topics[topic]
        if meta.error is not None:
            return []
        partitions = sorted(meta.partitions)
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        pending, records = set(partitions), []
        while pending:
            message = consumer.poll(timeout)
            assert message is not None, f"no end of {topic} within {timeout} s"
            error = message.error()
            if error is not None:
                assert error.code() == KafkaError._PARTITION_EOF, error
                pending.discard(message.partition())
                continue
            key, value = message.key(), message.value()
            records.append(Record(key.decode() if key is not None else None,
                                  value.decode() if value is not None else None,
                                  {k: (v or b"").decode() for k, v in message.headers() or []},
                                  message.partition(), message.offset()))
        return records
    finally:
        consumer.close()


def is_compacted(bootstrap: str, topic: str) -> bool:
    from confluent_kafka.admin import AdminClient, ConfigResource

    admin = AdminClient({"bootstrap.servers": bootstrap})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    config = admin.describe_configs([resource])[resource].result()
    return "compact" in config["cleanup.policy"].value


def latest_per_key(records: list[Record]) -> list[Record]:
    """What a compacted topic keeps: each key's last record, tombstones removing it."""
    latest: dict[str | None, Record] = {}
    for record in sorted(records, key=lambda r: (r.partition, r.offset)):
        latest[record.key] = record
    return [r for r in latest.values() if r.value is not None]


def as_table(records: list[Record], schema: pa.Schema) -> pa.Table:
    """The records' JSON values as rows of ``schema`` (ISO timestamps parsed)."""
    rows = [json.loads(r.value) for r in records if r.value is not None]
    for row in rows:
        for field in schema:
            if pa.types.is_timestamp(field.type) and row.get(field.name) is not None:
                row[field.name] = dt.datetime.fromisoformat(row[field.name])
    return pa.Table.from_pylist(rows, schema=schema)


def rows_of(bootstrap: str, topic: str, schema: pa.Schema) -> pa.Table:
    """The topic's rows as a read_committed consumer ends up with them."""
    records = read_topic(bootstrap, topic)
    if is_compacted(bootstrap, topic):
        records = latest_per_key(records)
    return as_table(records, schema)


def config_of(destination: Any) -> dict[str, Any]:
    return dict(destination.config)
