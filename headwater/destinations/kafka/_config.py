"""The Kafka destination's config: its JSON Schema, and the settings read from it.

Why a module of its own: the spec, the topic name template and the
librdkafka settings a config turns into are plain data, tested without a
broker.  Connection settings (``bootstrap_servers``, the ``producer`` map with
``security.protocol`` and ``sasl.*``) are what a Kafka source needs too; they
are kept small here so the two can later share them.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from headwater._librdkafka import SECRET_SETTINGS, is_secret
from headwater.config import register_secrets
from headwater.errors import ConfigError

DEFAULT_TOPIC = "{stream}"
DEFAULT_MARKERS_TOPIC = "_headwater_commits"
#: The fields a topic template may name.
TEMPLATE_FIELDS = ("stream", "connection", "namespace")

#: Settings Headwater sets itself: exactly once depends on them.
RESERVED_SETTINGS = ("transactional.id", "enable.idempotence", "isolation.level",
                     "bootstrap.servers", "group.id", "enable.auto.commit")
#: A Kafka topic name: what the broker accepts (at most 249 of these characters).
TOPIC_NAME = re.compile(r"^[A-Za-z0-9._-]{1,249}$")


def spec() -> dict[str, Any]:
    """JSON Schema of the destination's config (``destination.config``)."""
    secret = {name: {"type": "string", "airbyte_secret": True,
                     "description": "A librdkafka secret setting (masked everywhere)."}
              for name in SECRET_SETTINGS}
    return {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "title": "Apache Kafka destination",
        "type": "object",
        "additionalProperties": False,
        "required": ["bootstrap_servers"],
        "properties": {
            "bootstrap_servers": {
                "type": "string", "minLength": 1, "pattern": r"^[^\s,]+:\d+(,[^\s,]+:\d+)*$",
                "description": "host:port[,host:port...] of the brokers."},
            "topic": {
                "type": "string", "minLength": 1, "default": DEFAULT_TOPIC,
                "description": "Each stream's topic, a template of {stream}, {connection} "
                "and {namespace} (default {stream})."},
            "value_format": {
                "type": "string", "enum": ["json", "avro"], "default": "json",
                "description": "json: each record's value is the row as a JSON object. avro "
                "(with schema_registry_url) is refused: no schema registry could be run "
                "where Headwater is tested, so it is not offered untested."},
            "schema_registry_url": {"type": "string", "minLength": 1},
            "producer": {
                "type": "object",
                "description": "librdkafka settings passed to every client as they are "
                "(security.protocol, sasl.mechanism, sasl.username, sasl.password, ssl.*, "
                "linger.ms, compression.type...); secrets are masked everywhere.",
                "properties": secret,
                "additionalProperties": {"type": ["string", "integer", "number", "boolean"]},
            },
            "create_topics": {
                "type": "boolean", "default": True,
                "description": "Create missing topics (a stream's topic, the markers topic)."},
            "partitions": {"type": "integer", "minimum": 1,
                           "description": "Partitions of a topic Headwater creates "
                           "(default: the broker's num.partitions)."},
            "replication_factor": {"type": "integer", "minimum": 1,
                                   "description": "Replicas of a topic Headwater creates "
                                   "(default: the broker's default.replication.factor)."},
            "topic_config": {
                "type": "object", "additionalProperties": {"type": ["string", "integer"]},
                "description": "Topic configs of a topic Headwater creates (retention.ms, "
                "min.insync.replicas...). An append_dedup stream's topic gets "
                "cleanup.policy=compact unless this names a policy."},
            "markers_topic": {
                "type": "string", "minLength": 1, "default": DEFAULT_MARKERS_TOPIC,
                "description": "The compacted topic that holds the commit markers."},
        },
    }


@dataclass(frozen=True)
class KafkaSettings:
    """What a validated config says, in the shapes the clients take.

    Plain values only: pickled to the executors with the task.
    """

    bootstrap_servers: str
    topic: str = DEFAULT_TOPIC
    markers_topic: str = DEFAULT_MARKERS_TOPIC
    #: librdkafka settings of the user's (security, tuning), as strings.
    client: Mapping[str, str] = field(default_factory=dict)
    create_topics: bool = True
    partitions: int | None = None
    replication_factor: int | None = None
    topic_config: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> KafkaSettings:
        """The settings of ``config`` (validated against :func:`spec`), or a
        :class:`ConfigError` naming the field and the shape expected."""
        if config.get("value_format", "json") == "avro":
            raise ConfigError(
                "destination.config.value_format: avro is not supported yet (expected json). "
                "Avro needs a schema registry, and none could be run where Headwater's Kafka "
                "destination is tested (docs/destinations/kafka.md says why), so it is "
                "refused rather than offered untested", field="value_format")
        if "schema_registry_url" in config:
            raise ConfigError("destination.config.schema_registry_url: only used with "
                              "value_format: avro, which is not supported yet",
                              field="schema_registry_url")
        client = {str(k): _setting_text(k, v) for k, v in (config.get("producer") or {}).items()}
        reserved = sorted(set(client) & set(RESERVED_SETTINGS))
        if reserved:
            raise ConfigError(
                f"destination.config.producer: {', '.join(reserved)} cannot be set (Headwater "
                "sets them itself: exactly once depends on them)", field="producer")
        register_secrets(v for k, v in client.items() if is_secret(k))
        topic = str(config.get("topic", DEFAULT_TOPIC))
        check_template(topic)
        markers = str(config.get("markers_topic", DEFAULT_MARKERS_TOPIC))
        if not TOPIC_NAME.match(markers):
            raise ConfigError(f"destination.config.markers_topic: {markers!r} is not a Kafka "
                              "topic name (expected 1-249 of a-z A-Z 0-9 . _ -)",
                              field="markers_topic")
        return cls(bootstrap_servers=str(config["bootstrap_servers"]), topic=topic,
                   markers_topic=markers, client=client,
                   create_topics=bool(config.get("create_topics", True)),
                   partitions=_optional_int(config.get("partitions")),
                   replication_factor=_optional_int(config.get("replication_factor")),
                   topic_config={str(k): str(v) for k, v in
                                 (config.get("topic_config") or {}).items()})

    def topic_of(self, stream: str, *, connection: str = "", namespace: str | None = None) -> str:
        """The topic of ``stream`` by the template; a name Kafka would refuse is an error."""
        name = self.topic.format(stream=stream, connection=connection, namespace=namespace or "")
        if not TOPIC_NAME.match(name) or name in (".", ".."):
            raise ConfigError(
                f"destination.config.topic: {self.topic!r} gives {name!r} for stream {stream}, "
                "which is not a Kafka topic name (expected 1-249 of a-z A-Z 0-9 . _ -)",
                field="topic", stream=stream)
        return name

    def first_server(self) -> tuple[str, int]:
        """The first bootstrap server's host and port (what an error names)."""
        host, _, port = self.bootstrap_servers.split(",")[0].rpartition(":")
        return host, int(port)

    def namespace(self) -> str:
        """``kafka://host:port`` of the first bootstrap server: lineage's namespace."""
        host, port = self.first_server()
        return f"kafka://{host}:{port}"


def check_template(template: str) -> None:
    """Refuse a topic template that names a field other than :data:`TEMPLATE_FIELDS`."""
    try:
        names = [name for _, name, _, _ in string.Formatter().parse(template) if name is not None]
    except ValueError as exc:
        raise ConfigError(f"destination.config.topic: {template!r} is not a template "
                          f"({exc}; expected text with {{stream}}, {{connection}} or "
                          "{namespace})", field="topic") from exc
    unknown = [name for name in names if name not in TEMPLATE_FIELDS]
    if unknown:
        raise ConfigError(f"destination.config.topic: {template!r} names {{{unknown[0]}}} "
                          "(expected only {stream}, {connection} or {namespace})",
                          field="topic")


def _setting_text(name: Any, value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise ConfigError(f"destination.config.producer.{name}: expected a string, number or "
                      f"boolean, got {type(value).__name__}", field=f"producer.{name}")


def _optional_int(value: Any) -> int | None:
    return None if value is None else int(value)


__all__ = ["DEFAULT_MARKERS_TOPIC", "DEFAULT_TOPIC", "KafkaSettings", "check_template", "spec"]
