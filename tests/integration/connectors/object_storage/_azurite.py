"""Azurite, Microsoft's Azure Storage emulator, as a blob server on 127.0.0.1.

scripts/setup-tests installs the npm package into Headwater's cache; this starts
its blob service on a free port, in memory, with an account of the test's own
(``AZURITE_ACCOUNTS``), so a wrong key is refused as Azure refuses it.  The
process is stopped on the way out.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests._processes import stop

HOST = "127.0.0.1"
#: Keep in step with scripts/setup-tests, which installs this version.  3.37 is the first
#: that honours List Blobs' ``startFrom``, with which delta-rs (object_store) lists a log's
#: commits after the one it read: 3.35 listed from the start, so a table's second commit
#: through delta-rs failed with "Invalid table version: 1".
AZURITE_VERSION = "3.37.0"


def azurite_binary() -> Path:
    """The installed ``azurite-blob``, or an error that says what to install."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder = Path(os.environ.get("HEADWATER_AZURITE_DIR")
                  or cache / "headwater" / f"azurite-{AZURITE_VERSION}")
    binary = folder / "node_modules" / ".bin" / "azurite-blob"
    if shutil.which("node") is None:
        raise RuntimeError("the Azure tests run Azurite, which needs Node.js: install node and "
                           "npm (Debian: apt-get install nodejs npm), then run "
                           "scripts/setup-tests")
    if not binary.exists():
        raise RuntimeError(f"Azurite is not installed at {folder}: run scripts/setup-tests "
                           "(it installs the npm package azurite there)")
    return binary


@contextmanager
def azurite(account: str, key: str, port: int, folder: Path) -> Iterator[str]:
    """Yield the blob endpoint (``http://127.0.0.1:PORT/ACCOUNT``) of a fresh Azurite."""
    binary = azurite_binary()
    with (folder / "azurite.log").open("wb") as log:
        process = subprocess.Popen(
            [str(binary), "--blobHost", HOST, "--blobPort", str(port), "--inMemoryPersistence",
             "--disableTelemetry", "--silent", "--skipApiVersionCheck"],
            env={**os.environ, "AZURITE_ACCOUNTS": f"{account}:{key}"},
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=folder)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection((HOST, port), timeout=1):
                    break
            except OSError:
                pass
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"Azurite did not start on {HOST}:{port}: "
                                   f"{(folder / 'azurite.log').read_text()[-2000:]}")
            time.sleep(0.1)
        yield f"http://{HOST}:{port}/{account}"
    finally:
        stop(process)
