"""The real Apache Kafka broker tests use: one KRaft node started by ``scripts/kafka``.

The session fixture (``kafka_broker`` in ``tests/conftest.py``) reuses a broker
that is already running and leaves it running; one it started itself is stopped
at the end of the run (by the xdist controller when two workers share it,
``tests/_workers.py``).  Each test makes topics of its own names
(:meth:`KafkaBroker.topic_prefix`), so tests sharing the broker never meet.
"""

from __future__ import annotations

import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

from tests import _script_server

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "kafka"


@dataclass(frozen=True)
class KafkaBroker:
    """The broker's bootstrap address (``127.0.0.1:PORT``)."""

    bootstrap: str

    @property
    def host(self) -> str:
        return self.bootstrap.rsplit(":", 1)[0]

    @property
    def port(self) -> int:
        return int(self.bootstrap.rsplit(":", 1)[1])

    @staticmethod
    def topic_prefix() -> str:
        """A prefix no other test's topics share."""
        return f"hw-{uuid.uuid4().hex[:10]}-"

    def run_tool(self, java_class: str, *args: str, timeout: float = 120,
                 ) -> subprocess.CompletedProcess[str]:
        """One of Kafka's own Java tools (a client that is not Headwater's), on this broker."""
        return subprocess.run([str(SCRIPT), "run", java_class, *args], check=False,
                              capture_output=True, text=True, timeout=timeout)


def running() -> bool:
    return _script_server.running(SCRIPT)


def start() -> tuple[KafkaBroker, bool]:
    """The running broker, and whether this call started it (two workers may ask at once)."""
    address, started = _script_server.start(SCRIPT)
    return KafkaBroker(address), started


def stop() -> None:
    _script_server.stop(SCRIPT)
