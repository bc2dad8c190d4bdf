"""``serve`` fires ``when: late`` / ``when: stale`` hooks once per change, from its ticks,
over a real SQLite store and real hook commands."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from headwater.metadata_store import MetadataStore
from headwater.serve import HealthWatch, Scheduler
from tests._clock import FastClock
from tests.unit.metadata_store.test_metadata_store_figures import run, store_clock
from tests.unit.serve.test_scheduler import Runs, write

START = datetime(2026, 11, 20, 14, 0, tzinfo=UTC)


def test_a_late_then_stale_connection_fires_each_hook_once(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    folder = tmp_path / "connections"
    folder.mkdir()
    db = tmp_path / "meta.db"
    store = MetadataStore(f"sqlite:///{db}")
    run(store, store_clock(monkeypatch), "shop", seconds=3)  # started at START
    store.save_state("shop", "users", {"state_type": "date-range", "slices": [
        {"start": "2026-11-01T00:00:00Z", "end": "2026-11-20T13:30:00Z"}]},
        run_id=None, checkpoint_index=None)
    out = tmp_path / "hooks.txt"
    echo = f'echo "$HEADWATER_EVENT $HEADWATER_CONNECTION $HEADWATER_STALE_STREAMS" >> {out}'
    write(folder, "shop", "*/15 * * * *", metadata_store=f"sqlite:///{db}",
          after_sync=[{"command": echo, "when": "late"}, {"command": echo, "when": "stale"},
                      {"command": f"echo after-a-run >> {out}", "when": "always"}])
    clock = FastClock(START + timedelta(minutes=5))
    watch = HealthWatch(every_s=0)
    scheduler = Scheduler(folder=folder, runner=Runs(), clock=clock, poll_s=1.0,
                          on_tick=watch.on_tick)

    def tick(minutes: float) -> None:
        clock.advance(minutes=minutes)
        scheduler.tick()
        watch.wait()  # for the look the tick started

    try:
        tick(0)  # 14:05: on time, data 35 min old (threshold: 30 min) -> stale
        assert out.read_text().splitlines() == ["stale shop users=2100"]
        tick(1)  # nothing changed: nothing fires again
        tick(20)  # 14:26: the 14:15 firing passed without a run (the test's runner records none)
        tick(1)
    finally:
        scheduler.shutdown()
        watch.close()
    assert out.read_text().splitlines() == ["stale shop users=2100", "late shop users=3360"]
