"""The real PostgreSQL server tests use: started by ``scripts/postgres``, one database per test.

The session fixture (``postgres_server`` in ``tests/conftest.py``) reuses a
server that is already running and leaves it running; a server it started
itself it stops at the end of the session.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests import _script_server

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "postgres"


@dataclass(frozen=True)
class PostgresServer(_script_server.DatabaseServer):
    """The server's admin URL (role ``headwater``, a superuser) and its parts."""

    def source_config(self, database: str, **extra: Any) -> dict[str, Any]:
        return {"host": self.host, "port": self.port, "database": database,
                "username": "headwater", "password": "headwater", "sslmode": "disable",
                **extra}

    @contextmanager
    def database(self) -> Iterator[str]:
        """A fresh, empty database, dropped afterwards (with its replication slots)."""
        import psycopg

        name = f"hw_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield name
        finally:
            with psycopg.connect(self.url, autocommit=True) as admin:
                admin.execute("SELECT pg_drop_replication_slot(slot_name) FROM "
                              "pg_replication_slots WHERE database = %s", [name])
                admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def running() -> bool:
    return _script_server.running(SCRIPT)


def start() -> tuple[PostgresServer, bool]:
    """The running server, and whether this call started it (two workers may ask at once)."""
    address, started = _script_server.start(SCRIPT)
    return PostgresServer(address), started


def stop() -> None:
    _script_server.stop(SCRIPT)
