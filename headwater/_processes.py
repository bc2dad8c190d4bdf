"""Is a process on this host still running: the one answer every liveness check shares.

Why its own module: the metadata store's lock, the HTTP sources' shared pages
and the Airbyte connectors' head start each judge a process dead to take over
what it left.  Spark's Python workers run the latter two and must not import
the metadata store (it loads SQLAlchemy), so the check lives here, with no
imports beyond the standard library.
"""

from __future__ import annotations

import os
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this host and is not a zombie.

    A killed child that its parent has not reaped yet still answers
    ``kill(pid, 0)``: it counts as dead, so what it held is taken over at once
    rather than after a staleness limit.
    """
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, it just belongs to another user
    return not _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False  # no procfs (macOS), or the process just went away
    fields = stat.rpartition(")")[2].split()
    return bool(fields) and fields[0] == "Z"


__all__ = ["pid_alive"]
