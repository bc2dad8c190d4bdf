"""Connector reads started before Spark is up, on a local master: a head start.

A ``headwater sync`` spends seconds starting Spark (the JVM, Delta's classes)
and then its first task, while a connector's ``read`` could already be
producing records: at 200,000 faker users that start-up alone was half of the
connector's own run.  On a local master the driver and the tasks share one
machine, so the driver may start a stream's ``read`` as soon as it knows the
stream and its state (before Spark), with the connector's stdout going to a
spool file; the task that reads the stream later follows that file instead of
starting the connector itself, and catches up at the speed of decoding.

It is only a head start, never a different read: the spool is used only when
the task's read would have been started with exactly the same config, catalog
and state (the plan decides, not the guess), and only once (the first task
attempt claims it by renaming it; a retry starts the connector afresh).  A
spool nobody claims is killed and removed, at the latest when the driver exits.
The spool lives in the temp folder: a fast connector can get ahead of the task
by up to its whole output (about 600 MB per million faker users).
"""

from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import logging
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from headwater._processes import pid_alive
from headwater.connectors.airbyte._process import (
    PIPE_BUFFER,
    MessageCounts,
    Record,
    RecordBlock,
    _protocol,
    connector_environment,
)
from headwater.protocol import AirbyteMessage

log = logging.getLogger("headwater.connectors.airbyte")

_OUT, _CLAIMED, _ERR, _RC = "out.jsonl", "out.claimed", "err.txt", "rc"
#: How often a task following a spool looks for more output.
POLL_S = 0.02
#: How long a task waits for the exit code of a read it saw end before it takes the
#: driver for gone (the driver writes the code once it has reaped the process).
RC_GRACE_S = 5.0
_running: dict[str, subprocess.Popen[bytes]] = {}
_discarded: set[str] = set()
_running_lock = threading.Lock()


def read_key(documents: dict[str, Any]) -> str:
    """What identifies a read: a digest of its config, catalog and state documents
    (a digest: it travels in the plan, and the config holds secrets)."""
    text = json.dumps(documents, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def read_args(folder: str, documents: dict[str, Any]) -> list[str]:
    """``read --config F --catalog F [--state F]``, the documents written into ``folder``."""
    args = ["read"]
    for name in ("config", "catalog", "state"):
        if documents.get(name) is not None:
            path = Path(folder) / f"{name}.json"
            path.write_text(json.dumps(documents[name]))
            args += [f"--{name}", str(path)]
    return args


@dataclass(frozen=True)
class HeadStart:
    """A read started by the driver: its spool folder, process id and read key."""

    folder: str
    pid: int
    key: str


def start(command: list[str], documents: dict[str, Any], label: str) -> HeadStart | None:
    """Start ``read`` now, its stdout into a spool file; ``None`` when it cannot start."""
    folder = tempfile.mkdtemp(prefix="hw-airbyte-head-")
    try:
        with open(Path(folder) / _OUT, "wb") as out, open(Path(folder) / _ERR, "wb") as err:
            process = subprocess.Popen(command + read_args(folder, documents), stdout=out,
                                       stderr=err, stdin=subprocess.DEVNULL,
                                       env=connector_environment())
    except OSError as exc:
        log.info("connector %s: no head start (%s)", label, exc)
        shutil.rmtree(folder, ignore_errors=True)
        return None
    with _running_lock:
        _running[folder] = process
    threading.Thread(target=_await_exit, args=(process, folder), daemon=True,
                     name="hw-airbyte-head-start").start()
    log.info("connector %s: read started before Spark (spool %s)", label, folder)
    return HeadStart(folder, process.pid, read_key(documents))


def _await_exit(process: subprocess.Popen[bytes], folder: str) -> None:
    code = process.wait()
    with _running_lock:
        _running.pop(folder, None)
        discarded = folder in _discarded
        _discarded.discard(folder)
        if not discarded:
            with contextlib.suppress(OSError):  # the follower removed it: nobody waits
                partial = Path(folder) / f"{_RC}.partial"
                partial.write_text(str(code))
                partial.rename(Path(folder) / _RC)
    if discarded:
        shutil.rmtree(folder, ignore_errors=True)


def discard(head: HeadStart) -> None:
    """Stop an unclaimed head start and remove its spool (on the driver)."""
    with _running_lock:
        process = _running.get(head.folder)
        if process is not None:
            _discarded.add(head.folder)  # its exit thread removes the folder
    if process is None:
        shutil.rmtree(head.folder, ignore_errors=True)
    elif process.poll() is None:
        with contextlib.suppress(OSError):
            process.kill()


@atexit.register
def _discard_all() -> None:
    with _running_lock:
        running = list(_running.items())
    for folder, process in running:  # the exit threads may not run any more: clean here
        with contextlib.suppress(OSError):
            process.kill()
            process.wait()
        shutil.rmtree(folder, ignore_errors=True)


def follow(head: HeadStart, label: str, stream: str | None, counts: MessageCounts,
           ) -> Iterator[RecordBlock | Record | AirbyteMessage] | None:
    """The head-started read's output, as :func:`run_connector` gives it; ``None`` when the
    spool is gone or another attempt claimed it (then start the connector afresh)."""
    folder = Path(head.folder)
    try:
        os.rename(folder / _OUT, folder / _CLAIMED)
    except OSError:
        return None
    return _followed(head, label, stream, counts)


def _followed(head: HeadStart, label: str, stream: str | None, counts: MessageCounts,
              ) -> Iterator[RecordBlock | Record | AirbyteMessage]:
    folder = Path(head.folder)

    def exit_code() -> int:
        dead_since: float | None = None
        while True:
            try:
                return int((folder / _RC).read_text())
            except (OSError, ValueError):
                # A process that just exited is dead (a zombie) before the driver's
                # thread has reaped it and written its code: wait for the code a while.
                if dead_since is None and not pid_alive(head.pid):
                    dead_since = time.monotonic()
                if dead_since is not None and time.monotonic() - dead_since > RC_GRACE_S:
                    return -signal.SIGKILL  # its driver is gone: it was killed with it
            time.sleep(POLL_S)

    def kill() -> None:
        if not (folder / _RC).exists():
            with contextlib.suppress(OSError):
                os.kill(head.pid, signal.SIGKILL)

    try:
        yield from _protocol(_spooled_lines(folder / _CLAIMED, folder / _RC, head.pid),
                             exit_code, kill, _StderrTail(folder / _ERR), label, stream, counts)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _spooled_lines(path: Path, rc: Path, pid: int) -> Iterator[str]:
    """The spool's lines as the connector writes them, until it has exited."""
    with open(path, encoding="utf-8", buffering=PIPE_BUFFER) as spool:
        partial = ""
        while True:
            line = spool.readline()
            if line:
                if line.endswith("\n"):
                    yield partial + line
                    partial = ""
                else:
                    partial += line
                continue
            if rc.exists() or not pid_alive(pid):
                rest = partial + spool.read()
                yield from rest.splitlines(keepends=True)
                return
            time.sleep(POLL_S)


class _StderrTail:
    """The spool's stderr, read only when a failure quotes it."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __iter__(self) -> Iterator[str]:
        try:
            lines = self.path.read_text(errors="replace").splitlines()
        except OSError:
            return iter(())
        return iter(lines[-20:])
