"""What the Kafka source and destination share about librdkafka: its secret settings and
what its error codes mean.

Why here, below both: the source (``connectors/kafka``) and the destination
(``destinations/kafka``) pass a user's librdkafka settings through as they are, so both must
mask the same credentials, and both must call refused credentials an auth failure (exit 3)
and a dead address unreachable; each still raises its own kind of error naming its own
config fields.
"""

from __future__ import annotations

import re

from confluent_kafka import KafkaError

__all__ = ["AUTH_CODES", "DENIED_CODES", "SECRET_SETTINGS", "UNREACHABLE_CODES", "is_secret"]

#: librdkafka settings that carry a credential: secrets in both specs, masked everywhere.
SECRET_SETTINGS = ("sasl.password", "sasl.oauthbearer.client.secret", "sasl.oauthbearer.config",
                   "ssl.key.password", "ssl.key.pem", "ssl.keystore.password",
                   "ssl.certificate.pem", "ssl_key")
#: Any other setting whose name says it holds a secret is masked as well.
_SECRET_NAME = re.compile(r"(?i)password|secret|token|\.key\.pem|credential")

#: Refused credentials: an auth failure, exit 3.
AUTH_CODES = frozenset({KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED})
#: A right the credentials lack (a topic, the cluster, a group, a transactional id).
DENIED_CODES = frozenset({KafkaError.TOPIC_AUTHORIZATION_FAILED,
                          KafkaError.CLUSTER_AUTHORIZATION_FAILED,
                          KafkaError.GROUP_AUTHORIZATION_FAILED,
                          KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED})
#: No broker answered at the address.
UNREACHABLE_CODES = frozenset({KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN,
                               KafkaError._RESOLVE})


def is_secret(setting: str) -> bool:
    """Whether a librdkafka setting's value is a credential, by its name."""
    return setting in SECRET_SETTINGS or bool(_SECRET_NAME.search(setting))
