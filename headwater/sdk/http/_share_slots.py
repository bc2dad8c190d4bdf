"""A split call budget's shares, kept on the machine rather than in one process.

Why: a split budget gives each of the ``tasks`` tasks that read at once an equal
share.  A share kept in a process's memory leaves with that process, and Spark
runs a task's Python in whichever idle worker process comes first: its pool is a
FIFO queue that may hold more processes than tasks run at once (another Python
stage of the same job, an earlier job of a long-lived session, a worker kept per
Python runner).  The next task then took the process idle the longest, with an
empty log, while the calls of the process that had just stopped still counted at
the server: three or four shares spent in one window, and the API answered 429
(CI caught it in a session shared by many tests).

So each share is a *slot*: a file on the machine, locked (``flock``) by the one
process spending it, that holds the answer stamps of its calls when the process
lets go.  A process takes a free slot when its first call needs the budget and
gives it back when its task ends (:meth:`ShareSlot.release`); the next process to
take that slot goes on with its window.  At most ``tasks`` slots exist for a
budget, so on one machine the budget holds however many processes Spark uses.
Stamps are ``time.monotonic()`` values: on Linux that is ``CLOCK_MONOTONIC``,
one clock for every process of the machine.  A process killed while it held a
slot leaves no stamps (the kernel drops its lock); the next holder then counts
the whole share as spent at the moment it takes the slot, which costs one window
of waiting, never a call too many.

Executors on different machines keep slots of their own: ``rate_limit.redis_url``
is the way to hold one budget exactly across a cluster.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import tempfile
import time
from pathlib import Path

__all__ = ["ShareSlot", "slot_folder"]


def slot_folder(key: str) -> Path:
    """The folder of one budget's slots on this machine, private to this user."""
    digest = hashlib.sha256(key.encode()).hexdigest()[:24]
    return Path(tempfile.gettempdir()) / f"headwater-call-shares-{os.getuid()}" / digest


class ShareSlot:
    """One of ``slots`` shares of a budget, held by this process until :meth:`release`."""

    def __init__(self, fd: int, index: int, inherited: list[float]) -> None:
        self.fd = fd
        self.index = index
        #: The stamps the previous holder left (or one full share "now" after a crash).
        self.inherited = inherited

    @classmethod
    def try_take(cls, key: str, slots: int, share: int) -> ShareSlot | None:
        """A free slot of the budget ``key``, locked for this process, or None if all
        ``slots`` are held (the caller waits and asks again)."""
        folder = slot_folder(key)
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        for index in range(slots):
            fd = os.open(folder / f"{index}", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            inherited = _read_left(fd, share)
            _write(fd, {"released": False, "pid": os.getpid()})
            return cls(fd, index, inherited)
        return None

    def release(self, stamps: list[float]) -> None:
        """Leave ``stamps`` (answer times, and lease ends of calls still out) for the
        next holder, and unlock."""
        if self.fd < 0:
            return
        try:
            _write(self.fd, {"released": True, "stamps": stamps})
        finally:
            os.close(self.fd)  # closing the descriptor drops the lock
            self.fd = -1


def _read_left(fd: int, share: int) -> list[float]:
    os.lseek(fd, 0, os.SEEK_SET)
    raw = b""
    while chunk := os.read(fd, 65536):
        raw += chunk
    if not raw:
        return []  # a new slot
    try:
        left = json.loads(raw)
        if left.get("released"):
            return [float(stamp) for stamp in left.get("stamps", [])]
    except (ValueError, AttributeError, TypeError):
        pass
    # The previous holder died holding it (or left something unreadable): count its
    # whole share as spent now, so the next window starts only after it.
    return [time.monotonic()] * share


def _write(fd: int, content: dict[str, object]) -> None:
    data = json.dumps(content).encode()
    os.ftruncate(fd, 0)
    os.pwrite(fd, data, 0)
