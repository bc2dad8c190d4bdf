"""The Kafka source's config: one pydantic model gives both the spec and the parsing.

``consumer`` passes librdkafka settings through (``security.protocol``, ``sasl.*``,
``ssl.*``), so whatever a cluster needs to be reached needs no code here.  The
settings that carry credentials are declared in the spec as secrets
(``airbyte_secret``), so they are masked in logs, errors, run history and
``--json``; the settings the source itself owns (where a read starts and stops,
that nothing is committed to a consumer group) are refused there, each naming the
option that sets it instead.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, model_validator

from headwater._librdkafka import SECRET_SETTINGS

__all__ = ["OWNED_SETTINGS", "SECRET_SETTINGS", "KafkaConfig"]


#: Consumer settings the source sets itself, and the option a user sets instead (None:
#: fixed, because a read is a range of offsets, not a group's subscription).
OWNED_SETTINGS: dict[str, str | None] = {
    "bootstrap.servers": "bootstrap_servers",
    "isolation.level": "isolation_level",
    "auto.offset.reset": "start",
    "enable.auto.commit": None,
    "enable.auto.offset.store": None,
    "enable.partition.eof": None,
    "group.id": None,
}

_Setting = str | int | float | bool

_CONSUMER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "librdkafka consumer settings passed through as they are "
                   "(security.protocol, sasl.mechanism, sasl.username, sasl.password, "
                   "ssl.ca.location, ...); the credential settings are secrets.",
    "properties": {name: {"type": "string", "airbyte_secret": True} for name in SECRET_SETTINGS},
    "additionalProperties": {"type": ["string", "integer", "number", "boolean"]},
}


class KafkaConfig(BaseModel):
    """Config of the ``kafka`` source (see the module docstring)."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, title="Kafka source",
        json_schema_extra={"description": "Topics of one Kafka cluster, one stream per topic, "
                           "read in offset ranges with the next offset of each topic "
                           "partition as state."})

    bootstrap_servers: str = Field(..., min_length=1, description="host:port[,host:port...] "
                                   "of the brokers to bootstrap from.")
    topics: list[Annotated[str, Field(min_length=1)]] | None = Field(
        None, min_length=1, description="The topics to read, one stream each.")
    topic_pattern: str | None = Field(
        None, min_length=1, description="A regular expression: every topic whose whole name "
        "matches is a stream (internal topics, starting with '__', never are).")
    consumer: Annotated[dict[str, _Setting], WithJsonSchema(_CONSUMER_SCHEMA)] = Field(
        default_factory=dict)
    value_format: Literal["json", "raw"] = Field(
        "json", description="json: each value is a JSON object whose fields are columns; raw: "
        "the value lands whole in the column 'value'.")
    raw_encoding: Literal["text", "bytes"] = Field(
        "text", description="How keys, header values and raw values land: text (UTF-8) or "
        "bytes (a binary column).")
    json_schema: dict[str, dict[str, Any]] = Field(
        default_factory=dict, alias="schema",
        description="Per topic, JSON Schema properties that override (or replace) the sampled "
        "ones, by field: {orders: {amount: {type: number}}}.")
    sample_records: Annotated[int, Field(ge=0)] = Field(
        1000, description="Records sampled (the newest of each topic) to learn a JSON topic's "
        "fields; 0: only the declared schema.")
    start: Literal["earliest", "latest"] = Field(
        "earliest", description="Where an incremental stream without state starts: the oldest "
        "offset the topic still holds, or its end (only records produced after the first sync "
        "are read).")
    isolation_level: Literal["read_committed", "read_uncommitted"] = Field(
        "read_committed", description="read_committed: only records of committed transactions "
        "(and non-transactional ones), up to the last stable offset; read_uncommitted: every "
        "record up to the high watermark, aborted ones too.")
    max_records_per_partition: Annotated[int, Field(ge=1)] = Field(
        100_000, description="Offsets one partition of a sync reads, at most: each topic "
        "partition's new offsets are cut into ranges of this many.")
    timeout_seconds: Annotated[float, Field(gt=0)] = Field(
        30.0, description="How long a request to the cluster, or a read that makes no "
        "progress, may take before it fails.")

    @model_validator(mode="after")
    def _topics_xor_pattern(self) -> KafkaConfig:
        if (self.topics is None) == (self.topic_pattern is None):
            raise ValueError("give either topics (a list of names) or topic_pattern (a regular "
                             "expression), not both and not neither")
        if self.topic_pattern is not None:
            try:
                re.compile(self.topic_pattern)
            except re.error as exc:
                raise ValueError(f"topic_pattern is not a regular expression: {exc}") from exc
        for name, instead in OWNED_SETTINGS.items():
            if name in self.consumer:
                hint = f"set {instead} instead" if instead else "the source sets it itself"
                raise ValueError(f"consumer setting {name!r} is not allowed: {hint}")
        return self

    def unused_schema(self) -> tuple[str, str] | None:
        """The first entry of ``schema`` no stream would read, as (field, why), or None:
        with ``value_format: raw`` a value is not parsed into fields, and a topic that is
        not a stream (not in ``topics``, or not matched by ``topic_pattern``) has none."""
        if self.json_schema and self.value_format == "raw":
            return ("schema", "with value_format: raw each value lands whole in the column "
                    "'value', so no field is typed by it; remove schema, or use json")
        for topic in self.json_schema:
            if self.topics is not None and topic not in self.topics:
                return (f"schema.{topic}", f"topic {topic!r} is not one of topics "
                        f"({', '.join(self.topics)}), so no stream reads it")
            if self.topic_pattern is not None and not re.fullmatch(self.topic_pattern, topic):
                return (f"schema.{topic}", f"topic {topic!r} does not match topic_pattern "
                        f"{self.topic_pattern!r}, so no stream reads it")
        return None

    def client_settings(self) -> dict[str, Any]:
        """What every client (consumer, admin) gets: the brokers and the passed-through
        settings (credentials included: never log this)."""
        # librdkafka prints every failed connection attempt to stderr (twenty a second
        # while a broker is down); errors reach the caller through error_cb instead.
        return {"bootstrap.servers": self.bootstrap_servers, "log_level": 2, **self.consumer}

    def consumer_settings(self) -> dict[str, Any]:
        """An assigned consumer's: reads where it is told, commits nothing to any group,
        reports the end of a partition, fails (rather than jumps) on an offset the log no
        longer holds."""
        # librdkafka wants a group id even for a consumer that never joins its group.
        # A range's last offsets are often a transaction marker: the end-of-partition
        # event that moves the position past it comes after one fetch wait, so short.
        return {"fetch.wait.max.ms": 100, **self.client_settings(),
                "group.id": "headwater-source",
                "enable.auto.commit": False, "enable.auto.offset.store": False,
                "enable.partition.eof": True, "auto.offset.reset": "error",
                "isolation.level": self.isolation_level}
