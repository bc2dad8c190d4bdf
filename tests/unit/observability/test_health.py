"""Late and stale, judged from a schedule, the newest run's start and the streams' states."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from headwater.config import ConnectionConfig
from headwater.observability.health import (
    ConnectionHealth,
    connection_health,
    late,
    stale_threshold_s,
    transitions,
)

NOW = datetime(2026, 11, 29, 1, 0, tzinfo=UTC)
EVERY_15 = "*/15 * * * *"


def config(**fields: object) -> ConnectionConfig:
    return ConnectionConfig.model_validate({"name": "shop", "source": {"type": "sample"},
                                            **fields})


def cursor_at(at: datetime) -> dict[str, object]:
    return {"state_type": "date-range", "slices": [{"start": "2020-01-01T00:00:00Z",
                                                    "end": at.isoformat()}]}


def test_a_schedule_that_fired_without_a_run_is_late_with_its_age() -> None:
    """Defect 5 of issue 39: a 15-minute schedule last run 686 days ago read "succeeded"."""
    long_ago = NOW - timedelta(days=686)
    found = late(EVERY_15, long_ago, None, NOW)
    assert found is not None and found.since == long_ago.replace(minute=15)
    assert found.age_s > 686 * 86400 - 3600
    assert late(EVERY_15, NOW - timedelta(minutes=10), None, NOW) is None  # not due yet
    # Due 2 min ago, within the grace (a run takes a moment to start): not late yet.
    assert late(EVERY_15, NOW - timedelta(minutes=1), None, NOW + timedelta(minutes=2)) is None
    assert late(EVERY_15, NOW - timedelta(minutes=1), None, NOW + timedelta(minutes=6))
    # Never ran: late from the first firing after the file appeared.
    assert late(EVERY_15, None, NOW - timedelta(hours=1), NOW) is not None
    assert late(EVERY_15, None, None, NOW) is None


def test_stale_past_twice_the_period_or_the_files_threshold() -> None:
    assert stale_threshold_s(config(schedule=EVERY_15), NOW) == 1800
    assert stale_threshold_s(config(schedule=EVERY_15, stale_after_s=60), NOW) == 60
    assert stale_threshold_s(config(), NOW) is None
    states = {"fresh": cursor_at(NOW - timedelta(minutes=20)),
              "old": cursor_at(NOW - timedelta(hours=2)),
              "numbers": {"state_type": "date-range", "slices": [{"start": 0, "end": "x"}]}}
    health = connection_health("shop", config(schedule=EVERY_15), valid=True,
                               last_started=NOW - timedelta(minutes=3), known_since=None,
                               states=states, now=NOW)
    assert health.late is None and [s.stream for s in health.stale] == ["old"]
    assert health.stale[0].freshness_s == 7200 and health.stale[0].threshold_s == 1800
    unknown = connection_health("shop", config(schedule=EVERY_15), valid=True,
                                last_started=None, known_since=None, states=None, now=NOW)
    assert not unknown.known and unknown.late is None and unknown.stale == []


def test_a_change_fires_once_not_on_every_look() -> None:
    fine = connection_health("shop", config(schedule=EVERY_15), valid=True,
                             last_started=NOW, known_since=None, states={}, now=NOW)
    later = NOW + timedelta(hours=2)
    behind = connection_health("shop", config(schedule=EVERY_15), valid=True,
                               last_started=NOW, known_since=None,
                               states={"users": cursor_at(NOW - timedelta(hours=1))},
                               now=later)
    seen: dict[str, ConnectionHealth] = {"shop": fine}
    assert [(name, what) for name, what, _ in transitions(seen, [behind])] == [
        ("shop", "late"), ("shop", "stale")]
    seen = {"shop": behind}
    assert transitions(seen, [behind]) == []
