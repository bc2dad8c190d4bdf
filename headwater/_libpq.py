"""What the PostgreSQL source and destination share about talking to a server.

Why here, below both: the source (``connectors/postgres``) and the destination
(``destinations/postgres``) connect alike and must word the same failures alike
(refused credentials are exit 3 on either side), while each raises its own kind
of error naming its own config fields.
"""

from __future__ import annotations

from typing import Any, Literal

import psycopg

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


__all__ = ["Failure", "connect_kwargs", "failure"]
