"""The ``kafka`` source: one stream per topic, read in offset ranges, offsets as state.

Example connection snippet::

    source:
      type: kafka
      config:
        bootstrap_servers: broker-1:9092,broker-2:9092
        topics: [orders, payments]            # or topic_pattern: "events\\..*"
        consumer: {security.protocol: SASL_SSL, sasl.mechanism: PLAIN,
                   sasl.username: headwater, sasl.password: "${KAFKA_PASSWORD}"}
    streams:
      - {name: orders, sync_mode: incremental, destination_sync_mode: append}

Planning asks the cluster where each topic partition starts and ends (for
``read_committed`` the end is the last stable offset: what a read_committed
consumer can reach) and cuts the offsets not yet in the state into partitions of
at most ``max_records_per_partition`` offsets: partitions = topic partitions x
offset ranges.  The executors read each range with an assigned consumer
(:mod:`._reader`), and the state moves only with the commit that lands a range
(:class:`._offsets.OffsetCursor`), so each record lands once, in Delta and
Iceberg alike, whatever crashes between.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

from pydantic import ValidationError

from headwater.connectors.kafka._cluster import Cluster
from headwater.connectors.kafka._config import KafkaConfig
from headwater.connectors.kafka._decode import META_COLUMNS, OFFSET, to_record
from headwater.connectors.kafka._offsets import OffsetCursor, Span, cut, partition_id
from headwater.connectors.kafka._reader import read_range
from headwater.connectors.kafka._schema import topic_schema
from headwater.errors import ConfigError, SpecValidationError, StateError
from headwater.sdk import (
    Cursor,
    FinalStateCursor,
    IntegerStateConverter,
    Partition,
    PlanContext,
    RecordOrBatch,
    Source,
    Stream,
)

__all__ = ["KafkaSource", "KafkaStream"]

log = logging.getLogger(__name__)


class KafkaStream(Stream):
    """One topic.  Holds only config and its schema (it is pickled to executors)."""

    cursor_field = OFFSET
    primary_key = META_COLUMNS[:3]  # topic, partition, offset: a record, for ever
    #: New records are found by offset; append_dedup may order a key's versions by a
    #: column of the records instead (a value's own updated_at, _kafka_timestamp).
    versions_by_record_column = True
    #: Offsets are integers; only ``headwater backfill`` reads it, to be refused by
    #: :meth:`window_partitions` in the stream's own words.
    state_converter = IntegerStateConverter()

    def __init__(self, settings: KafkaConfig, topic: str) -> None:
        self._settings = settings
        self._topic = topic
        self._schema: dict[str, Any] | None = None

    @property
    def stream_name(self) -> str:
        return self._topic

    def json_schema(self) -> dict[str, Any]:
        if self._schema is None:
            cluster = Cluster(self._settings)
            self._schema = topic_schema(self._settings, self._topic,
                                        cluster.offsets(self._topic))
        return self._schema

    def __getstate__(self) -> dict[str, Any]:
        # Sampled once, on the driver: every task reads with the same schema.
        self.json_schema()
        return dict(self.__dict__)

    def cursor(self, state: Mapping[str, Any] | None, incremental: bool) -> Cursor:
        return OffsetCursor(state) if incremental else FinalStateCursor()

    def window_partitions(self, start: Any, end: Any) -> list[Partition]:
        raise ConfigError(f"stream {self._topic!r} is read by offset ranges per topic "
                          "partition, not by a cursor window: it has no window to backfill "
                          "(reset the stream to read the topic again)", stream=self._topic)

    # ------------------------------------------------------------------ planning

    def plan(self, state: Mapping[str, Any] | None, context: PlanContext) -> list[Partition]:
        incremental = context.incremental if context.incremental is not None \
            else state is not None
        return self._plan(state, incremental=incremental)

    def partitions(self, state: Mapping[str, Any] | None) -> list[Partition]:
        return self._plan(state, incremental=True)

    def _plan(self, state: Mapping[str, Any] | None, *, incremental: bool) -> list[Partition]:
        offsets = Cluster(self._settings).offsets(self._topic)
        if self._schema is None:
            self._schema = topic_schema(self._settings, self._topic, offsets)
        cursor = OffsetCursor(state if incremental else None)
        latest = incremental and self._settings.start == "latest" and not cursor.has_offsets
        plan: list[Partition] = []
        for number, (low, end) in sorted(offsets.items()):
            span = self._span(cursor, number, low, end, latest)
            ranges = cut(span, cursor.done(number), self._settings.max_records_per_partition)
            if not ranges and incremental and cursor.next_offset(number) != span.base:
                # Nothing to read, but the state must learn where this partition now
                # starts (start: latest, or offsets lost): an empty range says so.
                ranges = [(span.base, span.base)]
            plan += [self._partition(number, span.base, low_, high) for low_, high in ranges]
        return plan

    def _span(self, cursor: OffsetCursor, number: int, low: int, end: int,
              latest: bool) -> Span:
        known = cursor.next_offset(number)
        base = known if known is not None else (end if latest else low)
        if base > end:
            raise StateError(
                f"topic {self._topic!r} partition {number} ends at offset {end}, but the "
                f"state says offsets up to {base} were read: was the topic deleted and "
                "created again? Reset the stream to read it from its start",
                stream=self._topic)
        if base < low:
            log.warning("topic %s partition %d: offsets %d to %d were deleted (retention or "
                        "compaction) before a sync read them; they are lost, the sync reads "
                        "on from offset %d", self._topic, number, base, low - 1, low)
            base = low
        return Span(number, base, base, end)

    def _partition(self, number: int, base: int, low: int, high: int) -> Partition:
        return Partition(self._topic, partition_id(self._topic, number, low, high),
                         {"topic": self._topic, "partition": number, "base": base,
                          "from": low, "upto": high})

    def estimate_rows(self, partition: Partition) -> int | None:
        """At most one record per offset (markers, aborted and compacted records take
        offsets too)."""
        return int(partition.params["upto"]) - int(partition.params["from"])

    # ------------------------------------------------------------------ reading

    def read(self, partition: Partition) -> Iterator[RecordOrBatch]:
        params, settings = partition.params, self._settings
        number = int(params["partition"])
        for message in read_range(settings, self._topic, number, int(params["from"]),
                                  int(params["upto"])):
            _, timestamp = message.timestamp()
            yield to_record(self._topic, number, int(message.offset() or 0), timestamp,
                            _bytes(message.key()), _bytes(message.value()),
                            _headers(message.headers()),
                            value_format=settings.value_format, encoding=settings.raw_encoding)


def _bytes(data: str | bytes | None) -> bytes | None:
    return data.encode() if isinstance(data, str) else data


def _headers(headers: Any) -> list[tuple[str, bytes | None]] | None:
    """librdkafka gives a list of (name, bytes) pairs (names may repeat)."""
    if not headers:
        return None
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    return [(str(name), _bytes(value)) for name, value in pairs]


class KafkaSource(Source):
    """Topics of one Kafka cluster as streams; see the module docstring."""

    type_name = "kafka"

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        try:
            self._settings = KafkaConfig.model_validate(dict(config))
        except ValidationError as exc:
            problems = [(".".join(["source.config", *(str(p) for p in e["loc"])]), e["msg"])
                        for e in exc.errors(include_input=False)]
            raise SpecValidationError("the kafka source config does not match its spec",
                                      problems) from exc
        unused = self._settings.unused_schema()
        if unused is not None:
            field, why = unused
            raise ConfigError(f"{field}: {why}", field=f"source.config.{field}")
        self._streams: list[Stream] | None = None

    @classmethod
    def spec(cls) -> dict[str, Any]:
        schema = KafkaConfig.model_json_schema(mode="validation", by_alias=True)
        for prop in schema["properties"].values():
            if "default" in prop and prop["default"] is None:
                del prop["default"]  # absent is the default (topics or topic_pattern)
        return {"$schema": "http://json-schema.org/draft-07/schema#", **schema}

    def check(self) -> None:
        """Reach the brokers and find every configured topic (or one matching the pattern)."""
        cluster = Cluster(self._settings)
        topics = cluster.topics(self._settings.topics, self._settings.topic_pattern)
        if not topics:
            from headwater.errors import ConnectorError

            raise ConnectorError(f"Kafka at {self._settings.bootstrap_servers} has no topic "
                                 f"matching {self._settings.topic_pattern!r}",
                                 field="source.config.topic_pattern")
        for topic in topics:
            cluster.offsets(topic)  # the right to describe and read its offsets

    def streams(self) -> list[Stream]:
        if self._streams is None:
            settings = self._settings
            topics = Cluster(settings).topics(settings.topics, settings.topic_pattern)
            self._streams = [KafkaStream(settings, topic) for topic in topics]
        return list(self._streams)
