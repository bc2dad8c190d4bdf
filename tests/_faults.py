"""Faults the crash tests install at a sync's moments (:mod:`headwater._events`).

``after-commit:3`` SIGKILLs the process (nothing is cleaned up) the third time
the sync reaches ``after-commit``: after a checkpoint's commit and before its
state is saved.  Moments: ``after-plan``, ``after-commit``, ``after-release``,
``commit-landed`` (inside the destination, its commit durable, its answer not
given yet).  ``raise-commit-landed:2`` raises :class:`InjectedFault` instead,
once, on the second pass: a commit whose post-commit work failed.
``reading:1.5`` makes every task wait 1.5 s before it reads each partition, so a
test that kills a sync "while it reads" still finds it reading however fast the
machine and the writer are.
``blind-lookup`` is no moment: a resumed attempt's lookup of each checkpoint's
earlier commit by its marker (the commit routes' ``find``) answers "none", so
the test sees what the destination's commit alone does with a checkpoint the
table already holds (Delta: its ``txnAppId``/``txnVersion`` check).

Installed by ``tests/_faulty_cli.py`` in the CLI process it runs; never by
Headwater itself.
"""

from __future__ import annotations

import os
import signal
import threading
import time

from headwater import _events

#: The fault that hides earlier commits from a resumed attempt's lookup (not a moment).
BLIND_LOOKUP = "blind-lookup"


class InjectedFault(RuntimeError):
    """What a ``raise-`` fault raises."""


class Killed(BaseException):
    """A kill simulated in the test process (``install_fault(..., simulated=True)``).

    Nothing in the engine catches it (it catches ``Exception``), so the run stays
    unfinished, as SIGKILL leaves it; and once it is raised, every thread that
    reaches any later moment raises it too, so no lane commits or releases past
    the point where the process "died". Unlike a real kill, ``finally`` blocks run
    (the connection's lock is released): the real kills of ``test_crash_resume``
    keep that path proved, one per moment and destination.
    """


def _blind_lookup() -> None:
    """Make the commit routes' lookup of an earlier attempt's commit find nothing (the
    staging routes keep theirs)."""
    from headwater.engine import _commit_routes

    def find_nothing(*_: object) -> None:
        return None

    _commit_routes.CommitRows.find = find_nothing  # type: ignore[assignment,method-assign]


def install_fault(spec: str, *, simulated: bool = False) -> None:
    """Kill (or, for ``raise-...``, raise once) at the Nth pass of a moment: ``MOMENT:N``;
    or ``blind-lookup``. ``simulated``: raise :class:`Killed` instead of a SIGKILL."""
    if spec == BLIND_LOOKUP:
        _blind_lookup()
        return
    point, _, nth = spec.partition(":")
    raises = point.startswith("raise-")
    moment = point.removeprefix("raise-")
    wanted = int(nth or 1)
    passes = 0
    dead = False
    lock = threading.Lock()

    def listener(reached: str) -> None:
        nonlocal passes, dead
        if dead:  # a simulated kill: every thread stops at its next moment
            raise Killed(f"killed earlier, at {moment} (pass {wanted})")
        if reached != moment:
            return
        with lock:
            passes += 1
            # A raise happens once (the sync goes on); a kill ends the process anyway.
            hit = passes == wanted if raises else passes >= wanted
        if hit and raises:
            raise InjectedFault(f"fault injected at {moment} (pass {passes})")
        if hit and simulated:
            dead = True
            raise Killed(f"killed at {moment} (pass {passes})")
        if hit:
            os.kill(os.getpid(), signal.SIGKILL)

    _events.listen(listener)


class Pause:
    """Wait ``seconds`` whenever a task reaches ``moment`` (pickled to the executors)."""

    def __init__(self, moment: str, seconds: float) -> None:
        self.moment, self.seconds = moment, seconds

    def __call__(self, reached: str) -> None:
        if reached == self.moment:
            time.sleep(self.seconds)


def install_pause(spec: str) -> None:
    """``MOMENT:SECONDS``: every task waits that long whenever it reaches the moment."""
    moment, _, seconds = spec.partition(":")
    _events.listen_in_tasks(Pause(moment, float(seconds or 1)))
