"""The real MariaDB server tests use: started by ``scripts/mariadb``, one database per test.

The session fixture (``mariadb_server`` in ``tests/conftest.py``) reuses a server
that is already running and leaves it running; a server it started itself it
stops at the end of the session (the xdist controller does when two workers
share it, ``tests/_workers.py``).  The server writes a binary log in the form
change data capture reads (``binlog_format=ROW``, ``binlog_row_image=FULL``,
GTIDs), so the ``mysql`` source's CDC tests and the ``jdbc`` source's reads run
against the same one.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests import _script_server

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "mariadb"


@dataclass(frozen=True)
class MariaDBServer(_script_server.DatabaseServer):
    """The server's admin URL (user ``headwater``, every privilege) and its parts."""

    user = "headwater"
    password = "headwater"

    def jdbc_url(self, database: str) -> str:
        """The same database for a JDBC driver (MariaDB's or MySQL's Connector/J)."""
        return f"jdbc:mariadb://{self.host}:{self.port}/{database}"

    def source_config(self, database: str, **extra: Any) -> dict[str, Any]:
        return {"host": self.host, "port": self.port, "database": database,
                "username": self.user, "password": self.password, **extra}

    def connect(self, database: str | None = None, **options: Any) -> Any:
        """A PyMySQL connection as the admin user (autocommit, utf8mb4, UTC)."""
        import pymysql

        return pymysql.connect(host=self.host, port=self.port, user=self.user,
                               password=self.password, database=database,
                               charset="utf8mb4", autocommit=True,
                               init_command="SET time_zone = '+00:00'", **options)

    def execute(self, statement: str, database: str | None = None) -> None:
        """One statement as the admin user, on a connection of its own (in ``database``)."""
        connection = self.connect(database)
        try:
            with connection.cursor() as cursor:
                cursor.execute(statement)
        finally:
            connection.close()

    @contextmanager
    def database(self) -> Iterator[str]:
        """A fresh, empty database (utf8mb4), dropped afterwards."""
        name = f"hw_{uuid.uuid4().hex[:12]}"
        self.execute(f"CREATE DATABASE `{name}` CHARACTER SET utf8mb4")
        try:
            yield name
        finally:
            self.execute(f"DROP DATABASE IF EXISTS `{name}`")


def running() -> bool:
    return _script_server.running(SCRIPT)


def start() -> tuple[MariaDBServer, bool]:
    """The running server, and whether this call started it (two workers may ask at once)."""
    address, started = _script_server.start(SCRIPT)
    return MariaDBServer(address), started


def stop() -> None:
    _script_server.stop(SCRIPT)
