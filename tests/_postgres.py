"""The real PostgreSQL server tests use: started by ``scripts/postgres``, one database per test.

The session fixture (``postgres_server`` in ``tests/conftest.py``) reuses a
server that is already running and leaves it running; a server it started
itself it stops at the end of the session.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "postgres"
#: Held while a server is started (one per machine user; the script's folder is per clone).
LOCK = Path(tempfile.gettempdir()) / f"headwater-postgres-start-{os.getuid()}.lock"


@dataclass(frozen=True)
class PostgresServer:
    """The server's admin URL (role ``headwater``, a superuser) and its parts."""

    url: str

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or "127.0.0.1"

    @property
    def port(self) -> int:
        return urlsplit(self.url).port or 5432

    def database_url(self, database: str, user: str = "headwater",
                     password: str = "headwater") -> str:
        parts = urlsplit(self.url)
        netloc = f"{user}:{password}@{parts.hostname}:{parts.port}"
        return urlunsplit((parts.scheme, netloc, f"/{database}", "", ""))

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
    return subprocess.run([str(SCRIPT), "status"], check=False).returncode == 0


def start() -> tuple[PostgresServer, bool]:
    """The running server, and whether this call started it.

    Two pytest workers may ask at once (``tests/_workers.py``): one starts it under
    a lock, the other then finds it running.
    """
    with open(LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        was_running = running()
        url = subprocess.run([str(SCRIPT), "start"], check=True, capture_output=True,
                             text=True).stdout.strip().splitlines()[-1]
    return PostgresServer(url), not was_running


def stop() -> None:
    subprocess.run([str(SCRIPT), "stop"], check=True)
