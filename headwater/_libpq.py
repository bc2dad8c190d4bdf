"""What the PostgreSQL source and destination share about talking to a server.

Why here, below both: the source (``connectors/postgres``) and the destination
(``destinations/postgres``) connect alike and must word the same failures alike
(refused credentials are exit 3 on either side), while each raises its own kind
of error naming its own config fields.
"""

from __future__ import annotations

from typing import Any, Literal

import psycopg

from headwater.errors import AuthenticationError, HeadwaterError

#: What went wrong talking to a server, in the terms a message names.
Failure = Literal["credentials", "privilege", "database", "unreachable"]

_AUTH_MARKERS = ("password authentication failed", "authentication failed",
                 "no password supplied", "role \"", "pg_hba.conf")


def connect_kwargs(*, host: str, port: int, database: str | None, username: str | None,
                   password: str | None, sslmode: str) -> dict[str, Any]:
    """psycopg ``connect`` keywords (no URI parsing, so nothing is mis-quoted)."""
    args: dict[str, Any] = {"host": host, "port": port, "dbname": database, "user": username,
                            "sslmode": sslmode, "application_name": "headwater",
                            "connect_timeout": 10}
    if password is not None:
        args["password"] = password
    return args


def failure(exc: BaseException) -> Failure | None:
    """Which failure ``exc`` is (None: another error, the statement's own)."""
    lowered = " ".join(str(exc).split()).lower()
    sqlstate = getattr(exc, "sqlstate", None)
    if sqlstate in {"28P01", "28000"} or any(m in lowered for m in _AUTH_MARKERS):
        return "credentials"
    if sqlstate == "42501" or "permission denied" in lowered:
        return "privilege"
    if sqlstate == "3D000" or ("database" in lowered and "does not exist" in lowered):
        return "database"
    if isinstance(exc, psycopg.OperationalError) and ("connection" in lowered
                                                      or "timeout" in lowered):
        return "unreachable"
    return None


def explain(exc: BaseException, where: str, *, error: type[HeadwaterError], config: str,
            connection_lost: bool = False, **context: Any) -> HeadwaterError:
    """``exc`` in words a person can act on, one wording for the source and the destination.

    ``where`` names the server (host, port, database, role); ``error`` is the side's own
    error class for everything but refused credentials (always
    :class:`~headwater.errors.AuthenticationError`, exit 3); ``config`` is the side's
    config path (``source.config``), so the field named is the one to fix.
    ``connection_lost``: the caller knows ``exc`` is a connection lost mid-statement,
    worded as unreachable too.
    """
    text = " ".join(str(exc).split())
    kind = failure(exc)
    if kind == "credentials":
        return AuthenticationError(f"{where} refused the credentials: {text}",
                                   field=f"{config}.password", **context)
    if kind == "privilege":
        return error(f"{where}: the role lacks a privilege: {text}", **context)
    if kind == "database":
        return error(f"{where}: the database does not exist: {text}",
                     field=f"{config}.database", **context)
    if kind == "unreachable" or connection_lost:
        return error(f"cannot reach {where}: {text}", field=f"{config}.host", **context)
    return error(f"{where}: {type(exc).__name__}: {text}", **context)


__all__ = ["Failure", "connect_kwargs", "explain", "failure"]
