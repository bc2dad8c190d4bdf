"""The librdkafka settings of each client, and Kafka's errors in plain words.

Why one place: the producer, the markers reader and the admin client reach
the same cluster with the same security settings, and a broker that cannot be
reached or refuses a login must read the same whichever client met it first.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from headwater.errors import AuthenticationError, DestinationError, HeadwaterError

if TYPE_CHECKING:
    from headwater.destinations.kafka._config import KafkaSettings

#: Producer tuning Headwater starts from (each can be overridden in ``producer``):
#: measured with bench/kafka_destination.py (2,000,000 rows on a 2-core machine with the
#: broker on it: lz4 18.4-20.1 s, zstd 19.1 s, none 12.0-12.4 s: compressing costs the
#: producing tasks more CPU than it saves the broker; bench/RESULTS.md).
PRODUCER_DEFAULTS: Mapping[str, str] = {
    "linger.ms": "20",
    "batch.size": "1000000",
    "compression.type": "none",
    "queue.buffering.max.kbytes": "262144",
    "queue.buffering.max.messages": "1000000",
    # A transaction spans one source partition's rows; the broker's default cap
    # (transaction.max.timeout.ms) is 15 minutes.
    "transaction.timeout.ms": "900000",
}
#: Settings of the user's that every client takes (reaching the cluster, not producing).
_CONNECTION_PREFIXES = ("security.", "sasl.", "ssl.", "ssl_", "socket.", "client.", "broker.",
                        "api.version", "reconnect.", "metadata.", "connections.", "log_level",
                        "debug", "enable.ssl", "enable.sasl")
#: How long a client waits for the cluster before the answer is "unreachable".
TIMEOUT_S = 15.0


def connection_settings(settings: KafkaSettings) -> dict[str, str]:
    """What every client needs to reach the cluster: servers and security settings."""
    conf = {k: v for k, v in settings.client.items() if k.startswith(_CONNECTION_PREFIXES)}
    return {"bootstrap.servers": settings.bootstrap_servers, **conf}


def producer_settings(settings: KafkaSettings, transactional_id: str | None) -> dict[str, str]:
    """A producer's settings: idempotent, transactional when ``transactional_id`` is given."""
    conf = {**connection_settings(settings), **PRODUCER_DEFAULTS, **settings.client,
            "enable.idempotence": "true"}
    if transactional_id is not None:
        conf["transactional.id"] = transactional_id
    return conf


def reader_settings(settings: KafkaSettings) -> dict[str, str]:
    """A consumer that sees committed records only and keeps no offsets of its own."""
    return {**connection_settings(settings), "group.id": "headwater-markers-reader",
            "isolation.level": "read_committed", "enable.auto.commit": "false",
            "enable.partition.eof": "true", "auto.offset.reset": "earliest",
            # The reader stops at the end: a broker holding an empty fetch back for
            # its default 500 ms would only make it wait.
            "fetch.wait.max.ms": "10"}


def describe(exc: BaseException, settings: KafkaSettings, doing: str,
             seen: Iterable[Any] = (), **context: Any) -> HeadwaterError:
    """``exc`` (a ``KafkaException``, or anything) as Headwater's error, in plain words.

    ``seen`` are errors the client reported on its own (``error_cb``): a refused
    login shows there first, while the call itself only times out.
    """
    from confluent_kafka import KafkaError

    from headwater import _librdkafka

    errors = [e for e in [*seen, _kafka_error(exc)] if isinstance(e, KafkaError)]
    host, port = settings.first_server()
    codes = {e.code() for e in errors}
    text = "; ".join(dict.fromkeys(str(e.str()) for e in errors)) or str(exc)
    if codes & _librdkafka.AUTH_CODES:
        return AuthenticationError(f"the Kafka cluster at {host}:{port} refused the login "
                                   f"while {doing}: {text}; check producer.sasl.* and "
                                   "producer.security.protocol", **context)
    if codes & (_librdkafka.UNREACHABLE_CODES
                | {KafkaError._TIMED_OUT, KafkaError._MSG_TIMED_OUT}):
        return DestinationError(f"cannot reach the Kafka broker at {host}:{port} while "
                                f"{doing} ({text}); is it running, and is "
                                "bootstrap_servers right?", **context)
    if codes & _librdkafka.DENIED_CODES:
        return DestinationError(f"the Kafka cluster at {host}:{port} denied the right needed "
                                f"for {doing}: {text}", **context)
    return DestinationError(f"Kafka failed while {doing}: {text}", **context)


def _kafka_error(exc: BaseException) -> Any:
    args = getattr(exc, "args", ())
    return args[0] if args else None


__all__ = ["PRODUCER_DEFAULTS", "TIMEOUT_S", "connection_settings", "describe",
           "producer_settings", "reader_settings"]
