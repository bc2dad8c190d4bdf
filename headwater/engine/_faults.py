"""Named crash points, so tests can SIGKILL a sync exactly where it hurts most.

``HEADWATER_FAULT=after-commit:3`` kills the process (SIGKILL, nothing is
cleaned up) the third time the sync passes the ``after-commit`` point: after a
checkpoint's Delta commit and before its state is saved.  Unset, a fault point
costs one dictionary lookup.  Points: ``after-plan``, ``after-commit``,
``after-release``.
"""

from __future__ import annotations

import os
import signal
import threading

_ENV = "HEADWATER_FAULT"
_counts: dict[str, int] = {}
_lock = threading.Lock()


def fault_point(name: str) -> None:
    spec = os.environ.get(_ENV)
    if not spec:
        return
    point, _, nth = spec.partition(":")
    if point != name:
        return
    with _lock:
        _counts[name] = _counts.get(name, 0) + 1
        hit = _counts[name] >= int(nth or 1)
    if hit:
        os.kill(os.getpid(), signal.SIGKILL)
