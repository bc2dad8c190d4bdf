"""The serve scheduler with a fast clock: schedule, overlaps, retries, catch-up, reloads, stop."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from headwater.config import ConnectionConfig
from headwater.errors import ConfigError, ConnectionLockedError, SchemaContractError
from headwater.serve import RunOutcome, Scheduler
from tests._clock import FastClock

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def write(folder: Path, name: str, schedule: str | None = "* * * * *", **extra: Any) -> Path:
    document: dict[str, Any] = {"source": {"type": "sample", "config": {"users": 10}}, **extra}
    if schedule is not None:
        document["schedule"] = schedule
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


class Runs:
    """Records each run; ``outcomes`` scripts what successive runs return (default success)."""

    def __init__(self, outcomes: list[str] | None = None, gate: threading.Event | None = None,
                 ) -> None:
        self.calls: list[str] = []
        self.outcomes = list(outcomes or [])
        self.gate = gate

    def __call__(self, config: ConnectionConfig) -> RunOutcome:
        self.calls.append(config.name)
        if self.gate is not None:
            assert self.gate.wait(10), "the test never opened the gate"
        status = self.outcomes.pop(0) if self.outcomes else "succeeded"
        if status == "raise":
            raise RuntimeError("the source went away")
        if status == "frozen":  # the engine raises it: a schema change the contract refuses
            raise SchemaContractError("stream 'users' has a new column 'plan'; its "
                                      "schema_contract freezes new columns")
        if status == "misconfigured":
            raise ConfigError("source.config.password: not set")
        if status == "locked":
            raise ConnectionLockedError("connection is already being synced")
        if status == "stopped-unknown":  # a commit's outcome could not be checked
            return RunOutcome("stopped", run_id=f"run-{len(self.calls)}", retry=True)
        return RunOutcome(status, run_id=f"run-{len(self.calls)}")


def scheduler(folder: Path, runner: Callable[[ConnectionConfig], RunOutcome], clock: FastClock,
              last: datetime | None = None) -> Scheduler:
    return Scheduler(folder=folder, runner=runner, clock=clock, poll_s=1.0,
                     last_started=lambda _config: last)


def settle(s: Scheduler) -> None:
    """Let submitted runs finish, then record their outcome (a tick without time passing)."""
    for entry in s._entries.values():
        if entry.running is not None:
            entry.running.result(timeout=10)
    s.tick()


def whats(s: Scheduler, connection: str) -> list[str]:
    return [e.what for e in s.events if e.connection == connection]


def test_runs_on_schedule_and_not_before(tmp_path: Path) -> None:
    write(tmp_path, "hourly", schedule="0 * * * *")
    write(tmp_path, "manual", schedule=None)
    clock, runs = FastClock(), Runs()
    s = scheduler(tmp_path, runs, clock)
    s.tick()
    clock.advance(minutes=59)
    s.tick()
    assert runs.calls == []
    clock.advance(minutes=1)
    s.tick()
    settle(s)
    assert runs.calls == ["hourly"]
    assert whats(s, "hourly") == ["loaded", "started", "succeeded"]
    assert whats(s, "manual") == ["loaded"]
    s.shutdown()


def test_a_run_still_going_when_due_again_is_skipped(tmp_path: Path) -> None:
    write(tmp_path, "busy")
    gate = threading.Event()
    clock, runs = FastClock(), Runs(gate=gate)
    s = scheduler(tmp_path, runs, clock)
    s.tick()
    clock.advance(minutes=1)
    s.tick()  # starts, and blocks on the gate
    for _ in range(3):
        clock.advance(minutes=1)
        s.tick()
    assert runs.calls == ["busy"]
    assert whats(s, "busy").count("skipped") == 3
    gate.set()
    settle(s)
    clock.advance(minutes=1)
    s.tick()
    settle(s)
    assert runs.calls == ["busy", "busy"]
    s.shutdown()


def test_a_lock_held_elsewhere_is_a_skip_not_a_failure(tmp_path: Path) -> None:
    write(tmp_path, "shared")
    clock, runs = FastClock(), Runs(["locked"])
    s = scheduler(tmp_path, runs, clock)
    s.tick()
    clock.advance(minutes=1)
    s.tick()
    settle(s)
    assert whats(s, "shared")[-1] == "skipped"
    assert "retry" not in whats(s, "shared")
    s.shutdown()


def test_failures_are_retried_with_back_off_up_to_the_limit(tmp_path: Path) -> None:
    write(tmp_path, "flaky", schedule="0 0 * * *",
          retry={"max_retries": 2, "backoff_s": 30, "max_backoff_s": 45})
    clock, runs = FastClock(datetime(2026, 1, 1, 23, 59, 0, tzinfo=UTC)), Runs(
        ["failed", "raise", "failed"])
    s = scheduler(tmp_path, runs, clock)
    s.tick()
    clock.advance(minutes=1)
    s.tick()
    settle(s)
    retries = [e for e in s.events if e.what == "retry"]
    assert retries[-1].detail.startswith("retry 1 of 2")
    clock.advance(seconds=29)
    s.tick()
    assert len(runs.calls) == 1  # not before the back-off
    clock.advance(seconds=1)
    s.tick()
    settle(s)
    assert len(runs.calls) == 2
    assert [e for e in s.events if e.what == "failed"][-1].detail.endswith("the source went away")
    clock.advance(seconds=44)
    s.tick()
    assert len(runs.calls) == 2  # back-off doubled to 60 s, capped at 45 s
    clock.advance(seconds=1)
    s.tick()
    settle(s)
    assert len(runs.calls) == 3
    assert whats(s, "flaky")[-1] == "gave-up"
    clock.advance(hours=1)
    s.tick()
    assert len(runs.calls) == 3  # waits for the next firing (tomorrow)
    s.shutdown()


@pytest.mark.parametrize("failure", ["frozen", "misconfigured"])
def test_a_failure_only_a_person_can_fix_is_not_retried(tmp_path: Path, failure: str) -> None:
    """Retrying a frozen contract's refusal would read the source again to refuse again."""
    write(tmp_path, "strict", schedule="0 0 * * *",
          retry={"max_retries": 3, "backoff_s": 30, "max_backoff_s": 30})
    clock, runs = FastClock(datetime(2026, 1, 1, 23, 59, 0, tzinfo=UTC)), Runs([failure])
    s = scheduler(tmp_path, runs, clock)
    s.tick()
    clock.advance(minutes=1)
    s.tick()
    settle(s)
    assert whats(s, "strict")[-2:] == ["failed", "not-retried"]
    clock.advance(minutes=30)
    s.tick()
    assert runs.calls == ["strict"]  # no retry; the next firing (tomorrow) tries again
    clock.advance(days=1)
    s.tick()
    settle(s)
    assert runs.calls == ["strict", "strict"]
    assert whats(s, "strict")[-1] == "succeeded"
    s.shutdown()


def test_a_run_stopped_with_a_commit_unchecked_is_retried_but_one_stopped_on_request_is_not(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="headwater.serve")
    write(tmp_path, "unsure", schedule="0 0 * * *", retry={"max_retries": 2, "backoff_s": 30})
    write(tmp_path, "asked", schedule="0 0 * * *", retry={"max_retries": 2, "backoff_s": 30})
    scripted = {"unsure": Runs(["stopped-unknown"]), "asked": Runs(["stopped"])}
    calls: list[str] = []

    def runner(config: ConnectionConfig) -> RunOutcome:
        calls.append(config.name)
        return scripted[config.name](config)

    clock = FastClock(datetime(2026, 1, 1, 23, 59, 0, tzinfo=UTC))
    s = scheduler(tmp_path, runner, clock)
    s.tick()
    clock.advance(minutes=1)
    s.tick()
    settle(s)
    assert sorted(calls) == ["asked", "unsure"]
    assert whats(s, "unsure")[-2:] == ["stopped", "retry"]
    assert "retry" not in whats(s, "asked")
    # The stop that is retried warns as a failure does; the one asked for does not.
    levels = {(r.getMessage().split()[0], r.getMessage().split()[1]): r.levelno
              for r in caplog.records if r.name.startswith("headwater.serve")}
    assert levels[("unsure", "stopped")] == logging.WARNING
    assert levels[("asked", "stopped")] == logging.INFO
    clock.advance(seconds=30)
    s.tick()
    settle(s)
    assert sorted(calls) == ["asked", "unsure", "unsure"]  # the retry resumes the run
    assert whats(s, "unsure")[-1] == "succeeded"
    s.shutdown()


def test_missed_firings_after_downtime_run_once(tmp_path: Path) -> None:
    write(tmp_path, "late", schedule="*/10 * * * *")
    write(tmp_path, "fresh", schedule="*/10 * * * *")
    clock, runs = FastClock(T0 + timedelta(minutes=3)), Runs()
    last = {"late": T0 - timedelta(hours=5), "fresh": T0 + timedelta(minutes=1)}
    s = Scheduler(folder=tmp_path, runner=runs, clock=clock,
                  last_started=lambda config: last[config.name])
    s.tick()
    settle(s)
    assert runs.calls == ["late"]  # 30 firings missed: one run now
    assert "catch-up" in whats(s, "late")
    clock.advance(minutes=7)
    s.tick()
    settle(s)
    assert sorted(runs.calls) == ["fresh", "late", "late"]
    s.shutdown()


def test_added_edited_and_removed_files_are_picked_up(tmp_path: Path) -> None:
    clock, runs = FastClock(), Runs()
    s = scheduler(tmp_path, runs, clock)
    s.tick()
    path = write(tmp_path, "later", schedule="0 0 1 1 *")
    s.tick()
    assert whats(s, "later") == ["loaded"]
    write(tmp_path, "later", schedule="* * * * *")
    s.tick()
    clock.advance(minutes=1)
    s.tick()
    settle(s)
    assert runs.calls == ["later"]
    path.write_text("source: {type: sample, config: {users: -1}}\nschedule: [\n")
    s.tick()
    assert whats(s, "later")[-1] == "invalid"
    path.unlink()
    s.tick()
    assert whats(s, "later")[-1] == "removed"
    s.shutdown()


def test_stop_waits_for_the_run_in_progress_and_starts_nothing_new(tmp_path: Path) -> None:
    write(tmp_path, "slow", schedule="* * * * * */5")  # every 5 seconds
    gate = threading.Event()
    clock, runs = FastClock(), Runs(gate=gate)
    s = scheduler(tmp_path, runs, clock)
    stop = threading.Event()
    loop = threading.Thread(target=s.run, args=(stop,))
    loop.start()
    for _ in range(1000):
        if runs.calls:
            break
        threading.Event().wait(0.01)
    assert runs.calls == ["slow"]
    stop.set()
    loop.join(0.5)
    assert loop.is_alive()  # still waiting for the run in progress
    gate.set()
    loop.join(10)
    assert not loop.is_alive()
    assert whats(s, "slow")[-1] == "succeeded"
    assert runs.calls == ["slow"]


def test_a_firing_that_resumed_a_run_names_both_runs(tmp_path: Path) -> None:
    """The runner finished an unfinished run, then ran a new one: the event says so."""
    write(tmp_path, "crashed")
    clock = FastClock(T0)
    s = scheduler(tmp_path, lambda config: RunOutcome("succeeded", run_id="new",
                                                      resumed_run_id="old"), clock)
    s.tick()
    clock.advance(minutes=1)
    s.tick()
    settle(s)
    [done] = [e for e in s.events if e.what == "succeeded"]
    assert done.detail == "resumed old, then new"
