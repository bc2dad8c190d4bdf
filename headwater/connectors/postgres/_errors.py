"""Connecting, and turning PostgreSQL's errors into ones a person can act on.

Refused credentials become :class:`~headwater.errors.AuthenticationError`
(exit code 3); an unreachable server, a missing database or a missing right
become :class:`~headwater.errors.ConnectorError` naming host, port, database
and role.  The password never appears: it is not in libpq's messages, and the
engine masks registered secrets in everything it prints.
"""

from __future__ import annotations

from typing import Any

import psycopg

from headwater import _libpq
from headwater.connectors.postgres._config import PostgresConfig
from headwater.connectors.postgres._types import SESSION_SETTINGS
from headwater.errors import ConnectorError, HeadwaterError

__all__ = ["connect", "explain"]


def connect(settings: PostgresConfig, **kwargs: Any) -> psycopg.Connection[Any]:
    """A psycopg connection (autocommit) with the canonical session settings."""
    try:
        conn = psycopg.connect(**settings.kwargs(), autocommit=True, **kwargs)
    except psycopg.Error as exc:
        raise explain(exc, settings) from exc
    for name, value in SESSION_SETTINGS.items():
        conn.execute("SELECT set_config(%s, %s, false)", [name, value])
    return conn


def explain(exc: BaseException, settings: PostgresConfig, **context: Any) -> HeadwaterError:
    """The Headwater error for a failure talking to PostgreSQL."""
    where = (f"PostgreSQL at {settings.host}:{settings.port} (database {settings.database!r}, "
             f"role {settings.username!r})")
    return _libpq.explain(exc, where, error=ConnectorError, config="source.config", **context)
