"""Starting and stopping a server through its ``scripts/`` command, as the session fixtures do.

Each script (``scripts/postgres``, ``scripts/mariadb``, ``scripts/kafka``) answers
``start`` (printing its address as the last line), ``stop`` and ``status``.  Two
pytest workers may ask for a server at once (``tests/_workers.py``): one starts it
under a file lock, the other then finds it running.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit


def running(script: Path) -> bool:
    return subprocess.run([str(script), "status"], check=False).returncode == 0


def start(script: Path) -> tuple[str, bool]:
    """The running server's address, and whether this call started it."""
    # One lock per machine user and script (the script's folder is per clone).
    lock_path = Path(tempfile.gettempdir()) / f"headwater-{script.name}-start-{os.getuid()}.lock"
    with open(lock_path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        was_running = running(script)
        address = subprocess.run([str(script), "start"], check=True, capture_output=True,
                                 text=True).stdout.strip().splitlines()[-1]
    return address, not was_running


def stop(script: Path) -> None:
    subprocess.run([str(script), "stop"], check=True)


@dataclass(frozen=True)
class DatabaseServer:
    """A database server's admin URL (``scheme://headwater:headwater@host:port/db``)."""

    url: str

    @property
    def host(self) -> str:
        return urlsplit(self.url).hostname or "127.0.0.1"

    @property
    def port(self) -> int:
        port = urlsplit(self.url).port
        assert port is not None, f"{self.url} names no port"
        return port

    def database_url(self, database: str, user: str = "headwater",
                     password: str = "headwater") -> str:
        parts = urlsplit(self.url)
        netloc = f"{user}:{password}@{parts.hostname}:{parts.port}"
        return urlunsplit((parts.scheme, netloc, f"/{database}", "", ""))
