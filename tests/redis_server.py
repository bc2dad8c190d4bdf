"""A real ``redis-server`` (Debian's package, installed by scripts/setup) on 127.0.0.1.

Started on a free port with persistence off, for one test or module, and
stopped afterwards; the call budgets shared through Redis are tested against it.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests._processes import stop

HOST = "127.0.0.1"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


@contextmanager
def redis_server(folder: Path) -> Iterator[str]:
    """Yield the ``redis://`` URL of a fresh server; it is stopped on the way out."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise RuntimeError("redis-server is not installed; run scripts/setup")
    port = _free_port()
    process = subprocess.Popen(
        [binary, "--bind", HOST, "--port", str(port), "--save", "", "--appendonly", "no",
         "--dir", str(folder)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection((HOST, port), timeout=1) as sock:
                    sock.sendall(b"PING\r\n")
                    if sock.recv(16).startswith(b"+PONG"):
                        break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server did not start on {HOST}:{port}")
            time.sleep(0.1)
        yield f"redis://{HOST}:{port}/0"
    finally:
        stop(process)
