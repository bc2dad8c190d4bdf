"""Talking to the cluster from the driver: topics, their partitions and offsets, and
the cluster's errors turned into ones a person can act on.

Refused credentials become :class:`~headwater.errors.AuthenticationError` (exit
code 3); a broker that cannot be reached, or a topic that does not exist,
becomes :class:`~headwater.errors.ConnectorError` naming the brokers or the
topic.  librdkafka reports a refused connection through its error callback, not
through the request that waits on it, so requests here are short and repeated
until ``timeout_seconds``, and the first transport or authentication error seen
ends the wait.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import IsolationLevel, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, ClusterMetadata, OffsetSpec

from headwater import _librdkafka
from headwater.connectors.kafka._config import KafkaConfig
from headwater.errors import AuthenticationError, ConnectorError, HeadwaterError

__all__ = ["AUTH_CODES", "Cluster", "explain"]

#: Errors that mean refused credentials or rights.
AUTH_CODES = _librdkafka.AUTH_CODES | _librdkafka.DENIED_CODES | {KafkaError._SSL}
_UNREACHABLE_CODES = _librdkafka.UNREACHABLE_CODES


def _where(settings: KafkaConfig) -> str:
    return f"Kafka at {settings.bootstrap_servers}"


def explain(error: KafkaError | BaseException, settings: KafkaConfig,
            **context: Any) -> HeadwaterError:
    """The Headwater error for a failure talking to the cluster."""
    kafka = error.args[0] if isinstance(error, KafkaException) and error.args else error
    where = _where(settings)
    if isinstance(kafka, KafkaError):
        text, code = kafka.str(), kafka.code()
        if code in AUTH_CODES:
            return AuthenticationError(f"{where} refused the credentials: {text}",
                                       field="source.config.consumer", **context)
        if code in _UNREACHABLE_CODES:
            return ConnectorError(f"cannot reach {where}: {text}",
                                  field="source.config.bootstrap_servers", **context)
        return ConnectorError(f"{where}: {kafka.name()}: {text}", **context)
    return ConnectorError(f"{where}: {type(error).__name__}: {error}", **context)


@dataclass
class Cluster:
    """An admin client of the cluster, for the driver (planning, discovery, check)."""

    settings: KafkaConfig
    _errors: list[KafkaError] = field(default_factory=list)
    _admin: AdminClient | None = None

    def _client(self) -> AdminClient:
        if self._admin is None:
            settings: dict[str, Any] = {**self.settings.client_settings(),
                                        "error_cb": self._errors.append}
            self._admin = AdminClient(settings)
        return self._admin

    def _fatal(self) -> KafkaError | None:
        """The first error the callback reported that waiting will not cure."""
        self._client().poll(0)
        for error in self._errors:
            if error.code() in AUTH_CODES:
                return error
        for error in self._errors:
            if error.code() in _UNREACHABLE_CODES and error.code() != KafkaError._ALL_BROKERS_DOWN:
                return error
        return None

    def metadata(self, topic: str | None = None) -> ClusterMetadata:
        """The cluster's metadata (of one topic, or all), or the reason it cannot be had."""
        deadline = time.monotonic() + self.settings.timeout_seconds
        while True:
            try:
                return self._client().list_topics(topic=topic, timeout=1)
            except KafkaException as exc:
                fatal = self._fatal()
                if fatal is not None:
                    raise explain(fatal, self.settings) from exc
                if time.monotonic() >= deadline:
                    raise explain(exc, self.settings) from exc

    def topics(self, names: list[str] | None, pattern: str | None) -> list[str]:
        """The topics the config names (checked to exist), or those matching ``pattern``."""
        known = {name for name in self.metadata().topics if not name.startswith("__")}
        if names is None:
            assert pattern is not None
            return sorted(name for name in known if re.fullmatch(pattern, name))
        missing = [name for name in names if name not in known]
        if missing:
            raise ConnectorError(f"{_where(self.settings)} has no topic "
                                 f"{', '.join(repr(m) for m in missing)}",
                                 field="source.config.topics")
        return list(names)

    def partitions(self, topic: str) -> list[int]:
        found = self.metadata(topic).topics.get(topic)
        if found is None or found.error is not None:
            why = f": {found.error.str()}" if found is not None and found.error else ""
            raise ConnectorError(f"{_where(self.settings)} has no topic {topic!r}{why}",
                                 field="source.config.topics", stream=topic)
        return sorted(found.partitions)

    def offsets(self, topic: str) -> dict[int, tuple[int, int]]:
        """Per partition: the log start offset, and the end a consumer of the configured
        isolation level reaches (read_committed: the last stable offset, below every
        open transaction; read_uncommitted: the high watermark)."""
        numbers = self.partitions(topic)
        isolation = (IsolationLevel.READ_COMMITTED
                     if self.settings.isolation_level == "read_committed"
                     else IsolationLevel.READ_UNCOMMITTED)
        found: dict[str, dict[int, int]] = {}
        for name, spec in (("low", OffsetSpec.earliest()), ("end", OffsetSpec.latest())):
            request = {TopicPartition(topic, n): spec for n in numbers}
            try:
                answers = self._client().list_offsets(
                    request, isolation_level=isolation,
                    request_timeout=self.settings.timeout_seconds)
                found[name] = {tp.partition: int(answer.result().offset)
                               for tp, answer in answers.items()}
            except KafkaException as exc:
                raise explain(exc, self.settings, stream=topic) from exc
        return {n: (found["low"][n], found["end"][n]) for n in numbers}

