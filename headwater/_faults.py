"""Named crash points, so tests can SIGKILL a sync exactly where it hurts most.

Below the engine and the destinations, which both mark points (a destination
marks the moment its commit has landed).

``HEADWATER_FAULT=after-commit:3`` kills the process (SIGKILL, nothing is
cleaned up) the third time the sync passes the ``after-commit`` point: after a
checkpoint's commit and before its state is saved.  Unset, a fault point
costs one dictionary lookup.  Points: ``after-plan``, ``after-commit``,
``after-release``.

A point whose name starts with ``raise-`` raises :class:`InjectedFault` instead
of killing: ``HEADWATER_FAULT=raise-after-commit:2`` makes the destination's
second commit raise right after it landed (on either writer), as a commit
whose post-commit work failed does.

``HEADWATER_FAULT_PAUSE=reading:1.5`` makes every task wait 1.5 s before it
reads each partition, so a test that kills a sync "while it reads" still finds
it reading however fast the machine and the writer are.
"""

from __future__ import annotations

import os
import signal
import threading
import time

_ENV = "HEADWATER_FAULT"
_PAUSE_ENV = "HEADWATER_FAULT_PAUSE"
_counts: dict[str, int] = {}
_lock = threading.Lock()


class InjectedFault(RuntimeError):
    """The error a ``raise-`` fault point raises (see the module docstring)."""


def fault_point(name: str) -> None:
    spec = os.environ.get(_ENV)
    if not spec:
        return
    point, _, nth = spec.partition(":")
    if point != name:
        return
    with _lock:
        _counts[name] = _counts.get(name, 0) + 1
        # A raise happens once (the sync goes on); a kill ends the process anyway.
        hit = (_counts[name] == int(nth or 1) if name.startswith("raise-")
               else _counts[name] >= int(nth or 1))
    if hit and name.startswith("raise-"):
        raise InjectedFault(f"fault injected at {name} (HEADWATER_FAULT={spec})")
    if hit:
        os.kill(os.getpid(), signal.SIGKILL)


def pause_point(name: str) -> None:
    """Sleep here when ``HEADWATER_FAULT_PAUSE`` names this point (see the module docstring)."""
    spec = os.environ.get(_PAUSE_ENV)
    if not spec:
        return
    point, _, seconds = spec.partition(":")
    if point == name:
        time.sleep(float(seconds or 1))
