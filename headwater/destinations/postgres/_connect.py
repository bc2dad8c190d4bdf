"""Connecting to the destination's server, and its errors in words a person can act on.

Refused credentials become :class:`~headwater.errors.AuthenticationError` (exit
3); an unreachable server names host and port; a missing right says which.  The
password is never in libpq's messages, and the engine masks registered secrets
in everything it prints.
"""

from __future__ import annotations

from typing import Any

import psycopg

from headwater import _libpq
from headwater.destinations.postgres._config import PostgresDestinationConfig
from headwater.errors import DestinationError, HeadwaterError

#: Canonical session settings: timestamps read and written as UTC.
SESSION = "-c TimeZone=UTC"


def connect(settings: PostgresDestinationConfig, *, autocommit: bool = False,
            **context: Any) -> psycopg.Connection[Any]:
    """A psycopg connection to the destination (UTC session), or a Headwater error."""
    try:
        return psycopg.connect(**settings.kwargs(), options=SESSION, autocommit=autocommit)
    except psycopg.Error as exc:
        raise explain(exc, settings, **context) from exc


def explain(exc: BaseException, settings: PostgresDestinationConfig,
            **context: Any) -> HeadwaterError:
    """The Headwater error for a failure talking to the destination's server."""
    return _libpq.explain(exc, settings.where(), error=DestinationError,
                          config="destination.config", connection_lost=is_connection_lost(exc),
                          **context)


def is_connection_lost(exc: BaseException) -> bool:
    """Whether ``exc`` left a statement's outcome unknown (the link broke, no SQL error)."""
    return isinstance(exc, psycopg.OperationalError) and getattr(exc, "sqlstate", None) is None


__all__ = ["connect", "explain", "is_connection_lost"]
