"""Connecting with PyMySQL, and turning MySQL's errors into ones a person can act on.

Refused credentials (1045) become :class:`~headwater.errors.AuthenticationError`
(exit code 3, as every source's); an unreachable server, an unknown database and
a missing privilege become :class:`~headwater.errors.ConnectorError` naming host,
port, database and user.  The password never appears in MySQL's messages.
"""

from __future__ import annotations

from typing import Any

import pymysql

from headwater.connectors.mysql._config import MySQLConfig
from headwater.errors import AuthenticationError, ConnectorError, HeadwaterError

__all__ = ["SESSION_SETTINGS", "connect", "explain"]

#: Every reading session: TIMESTAMP values in UTC, and no SQL mode that changes how
#: the reader's literals read (NO_BACKSLASH_ESCAPES, ANSI_QUOTES).
SESSION_SETTINGS = ("SET time_zone = '+00:00'", "SET SESSION sql_mode = ''",
                    "SET NAMES utf8mb4")

_CREDENTIALS = {1045, 1698}  # access denied (password; unix_socket-only account)
_PRIVILEGE = {1044, 1142, 1143, 1227, 1370}  # db, table, column, super, routine
_DATABASE = {1049}
_UNREACHABLE = {2002, 2003, 2005, 2006, 2013}


def connect(settings: MySQLConfig, **kwargs: Any) -> pymysql.connections.Connection[Any]:
    """A PyMySQL connection (autocommit) with the reading sessions' settings."""
    try:
        conn = pymysql.connect(host=settings.host, port=settings.port, user=settings.username,
                               password=settings.password.get_secret_value()
                               if settings.password else "",
                               database=settings.database, charset="utf8mb4",
                               autocommit=True, connect_timeout=10, **kwargs)
    except pymysql.MySQLError as exc:
        raise explain(exc, settings) from exc
    with conn.cursor() as cursor:
        for statement in SESSION_SETTINGS:
            cursor.execute(statement)
    return conn


def _code(exc: BaseException) -> int | None:
    args = getattr(exc, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


def explain(exc: BaseException, settings: MySQLConfig, **context: Any) -> HeadwaterError:
    """The Headwater error for a failure talking to MySQL or MariaDB."""
    where = (f"MySQL at {settings.host}:{settings.port} (database {settings.database!r}, "
             f"user {settings.username!r})")
    text = " ".join(str(exc).split())
    code = _code(exc)
    if code in _CREDENTIALS:
        return AuthenticationError(f"{where} refused the credentials: {text}",
                                   field="source.config.password", **context)
    if code in _PRIVILEGE:
        return ConnectorError(f"{where}: the user lacks a privilege: {text}", **context)
    if code in _DATABASE:
        return ConnectorError(f"{where}: the database does not exist: {text}",
                              field="source.config.database", **context)
    if code in _UNREACHABLE or "Can't connect" in text:
        return ConnectorError(f"cannot reach {where}: {text}", field="source.config.host",
                              **context)
    return ConnectorError(f"{where}: {type(exc).__name__}: {text}", **context)
