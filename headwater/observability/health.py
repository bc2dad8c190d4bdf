"""A connection's health as the on-call engineer needs it: valid, late, stale.

Why its own module: a green "succeeded" on a connection whose 15-minute schedule
last ran 686 days ago hides the one thing that matters.  The page's list,
``/metrics`` and ``serve``'s hooks all judge from these pure functions (the
caller reads the store and passes ``now``), so they never disagree.

* **Late**: the schedule fired after the newest run's start (or, for a
  connection that never ran, after its file last changed) and no run has started
  since, for longer than a grace (:data:`LATE_GRACE_S`, at most one period: a
  sync takes a few seconds to record its run).
* **Stale**: a stream's freshness (now minus its newest committed time cursor,
  :func:`~headwater.observability.metrics.cursor_time`) exceeds the connection's
  ``stale_after_s``, by default twice the schedule's period; a connection with
  neither has no threshold, and a stream without a time cursor has no freshness.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from croniter import croniter

from headwater.config import ConnectionConfig

#: How long after a firing a run may take to start before the connection is late.
LATE_GRACE_S = 300.0


@dataclass(frozen=True)
class Late:
    """The firing that passed without a run, and for how long (seconds) it has."""

    since: datetime
    age_s: float


@dataclass(frozen=True)
class Stale:
    """A stream whose data is older than its connection's threshold."""

    stream: str
    freshness_s: float
    threshold_s: float


@dataclass(frozen=True)
class ConnectionHealth:
    """One connection file's health; ``known`` is false when its store did not answer
    (then nothing is said about lateness or staleness: no stale figure is shown)."""

    name: str
    valid: bool
    scheduled: bool = False
    known: bool = False
    late: Late | None = None
    stale: list[Stale] = field(default_factory=list)


def schedule_period_s(schedule: str, now: datetime) -> float:
    """The gap between the schedule's next two firings after ``now`` (seconds)."""
    firings = croniter(schedule, now)
    first: datetime = firings.get_next(datetime)
    second: datetime = firings.get_next(datetime)
    return (second - first).total_seconds()


def late(schedule: str, last_started: datetime | None, known_since: datetime | None,
         now: datetime) -> Late | None:
    """Whether ``schedule`` fired after the last run started (or after ``known_since``
    when none did) more than the grace ago; ``None``: not late, or nothing to judge by."""
    after = last_started or known_since
    if after is None:
        return None
    due: datetime = croniter(schedule, after).get_next(datetime)
    grace = min(LATE_GRACE_S, schedule_period_s(schedule, now))
    if now - due <= timedelta(seconds=grace):
        return None
    return Late(since=due, age_s=round((now - due).total_seconds(), 1))


def stale_threshold_s(config: ConnectionConfig, now: datetime) -> float | None:
    """The connection's ``stale_after_s``, else twice its schedule's period, else ``None``."""
    if config.stale_after_s is not None:
        return config.stale_after_s
    if config.schedule is None:
        return None
    return 2 * schedule_period_s(config.schedule, now)


def stale_streams(states: Mapping[str, Any], threshold_s: float | None,
                  now: datetime) -> list[Stale]:
    """The streams of ``states`` (stream -> state) whose freshness exceeds the threshold."""
    from headwater.observability.metrics import cursor_time

    if threshold_s is None:
        return []
    found = []
    for stream, state in sorted(states.items()):
        newest = cursor_time(state)
        if newest is None:
            continue
        freshness = (now - newest).total_seconds()
        if freshness > threshold_s:
            found.append(Stale(stream, round(freshness, 1), threshold_s))
    return found


def connection_health(name: str, config: ConnectionConfig | None, *, valid: bool,
                      last_started: datetime | None, known_since: datetime | None,
                      states: Mapping[str, Any] | None, now: datetime) -> ConnectionHealth:
    """The health of one connection file; ``states`` is ``None`` when its store did not
    answer."""
    if config is None or not valid:
        return ConnectionHealth(name=name, valid=False)
    scheduled = config.schedule is not None
    if states is None:
        return ConnectionHealth(name=name, valid=True, scheduled=scheduled)
    lateness = (late(config.schedule, last_started, known_since, now)
                if config.schedule is not None else None)
    return ConnectionHealth(name=name, valid=True, scheduled=scheduled, known=True,
                            late=lateness,
                            stale=stale_streams(states, stale_threshold_s(config, now), now))


def health_view(health: ConnectionHealth) -> dict[str, Any]:
    """The ``late`` / ``stale`` fields of the page's Connection."""
    return {"late": ({"since": health.late.since.isoformat(), "age_s": health.late.age_s}
                     if health.late is not None else None),
            "stale": [{"stream": s.stream, "freshness_s": s.freshness_s,
                       "threshold_s": s.threshold_s} for s in health.stale]}


def transitions(before: Mapping[str, ConnectionHealth],
                now: Sequence[ConnectionHealth]) -> list[tuple[str, str, ConnectionHealth]]:
    """``(connection, "late" | "stale", health)`` for each connection that became late,
    or gained a stale stream, between two looks: what fires a hook once per change."""
    found = []
    for health in now:
        old = before.get(health.name)
        if health.late is not None and (old is None or old.late is None):
            found.append((health.name, "late", health))
        old_stale = {s.stream for s in old.stale} if old is not None else set()
        if {s.stream for s in health.stale} - old_stale:
            found.append((health.name, "stale", health))
    return found


__all__ = ["LATE_GRACE_S", "ConnectionHealth", "Late", "Stale", "connection_health",
           "health_view", "late", "schedule_period_s", "stale_streams", "stale_threshold_s",
           "transitions"]
