"""``headwater serve``: the first signal stops the loop and the runs in progress, a second aborts.

Real signals sent to this process, a real :class:`~headwater.serve.Scheduler`
and a runner that, like ``run_sync``, registers its engine in
:class:`~headwater.serve.RunsInProgress` and runs until it is asked to stop;
no Spark.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from headwater.cli._serve import run_sync, serve_until_signalled
from headwater.config import ConnectionConfig, load_connection
from headwater.serve import RunOutcome, RunsInProgress, ScheduleEvent, Scheduler
from tests._clock import FastClock


class Engine:
    """Stands in for ``SyncEngine``: its run goes on until a stop is requested."""

    def __init__(self) -> None:
        self.stopping = threading.Event()
        self.reasons: list[str] = []

    def request_stop(self, reason: str = "stop requested") -> None:
        self.reasons.append(reason)
        self.stopping.set()


class Runner:
    """Each run registers a new engine and returns ``stopped`` once it is asked to stop.

    ``commit`` stands for the commit in flight: the run returns only after it
    is set as well (set by default).
    """

    def __init__(self, runs: RunsInProgress, commit: threading.Event | None = None) -> None:
        self.runs = runs
        self.engines: list[Engine] = []
        self.commit = commit or threading.Event()
        if commit is None:
            self.commit.set()

    def __call__(self, config: ConnectionConfig) -> RunOutcome:
        engine = Engine()
        self.engines.append(engine)
        with self.runs.running(engine):
            assert engine.stopping.wait(30), "no stop reached the run"
            assert self.commit.wait(30), "the test never let the commit land"
        return RunOutcome("stopped", run_id=f"run-{len(self.engines)}",
                          error=engine.reasons[0])


@pytest.fixture
def default_handlers() -> Iterator[None]:
    """Python's own SIGINT/SIGTERM handlers (what ``serve`` starts with), restored after."""
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the test run's own handler aside
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


def scheduled(folder: Path, runner: Callable[[ConnectionConfig], RunOutcome],
              ) -> tuple[Scheduler, threading.Event]:
    """A scheduler firing every second, and an event set once it skips a firing.

    A skip means the loop is back from starting the run: a signal sent from
    then on finds the main thread in the loop, never half-way through the
    submission of the run.
    """
    (folder / "long.yaml").write_text(yaml.safe_dump({
        "source": {"type": "sample", "config": {"users": 10}}, "schedule": "* * * * * *"}))
    looping = threading.Event()

    def on_event(event: ScheduleEvent) -> None:
        if event.what == "skipped":
            looping.set()

    # A second passes per tick; the short real wait lets a signal's handler thread run.
    scheduler = Scheduler(folder=folder, runner=runner, clock=FastClock(real_wait_s=0.01),
                          poll_s=1.0, on_event=on_event)
    return scheduler, looping


def send_after(event: threading.Event, *signals: signal.Signals,
               between: threading.Event | None = None) -> threading.Thread:
    """Once ``event`` is set, send ``signals`` to this process (after ``between``, if given)."""

    def send() -> None:
        assert event.wait(30)
        for n, sig in enumerate(signals):
            if n and between is not None:
                assert between.wait(30)
            os.kill(os.getpid(), sig)

    thread = threading.Thread(target=send)
    thread.start()
    return thread


def test_sigterm_stops_the_run_in_progress_then_returns(tmp_path: Path,
                                                        default_handlers: None) -> None:
    runs = RunsInProgress()
    runner = Runner(runs)
    scheduler, looping = scheduled(tmp_path, runner)
    told: list[str] = []
    sender = send_after(looping, signal.SIGTERM)
    serve_until_signalled(scheduler, runs, told.append)
    sender.join(10)
    assert told == ["SIGTERM received"]
    assert [e.reasons for e in runner.engines] == [["SIGTERM received"]]
    long_events = [(e.what, e.detail) for e in scheduler.events if e.connection == "long"]
    assert long_events[-1] == ("stopped", "run-1 SIGTERM received")
    assert "retry" not in [what for what, _ in long_events]  # stopped is not failed
    assert signal.getsignal(signal.SIGTERM) == signal.SIG_DFL
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_second_sigint_aborts_without_waiting_for_the_commit(tmp_path: Path,
                                                               default_handlers: None) -> None:
    runs = RunsInProgress()
    commit = threading.Event()
    runner = Runner(runs, commit=commit)
    scheduler, looping = scheduled(tmp_path, runner)
    told = threading.Event()
    sender = send_after(looping, signal.SIGINT, signal.SIGINT, between=told)
    try:
        with pytest.raises(KeyboardInterrupt):
            serve_until_signalled(scheduler, runs, lambda reason: told.set())
        sender.join(10)
        # The stop reaches the engine from the first signal's helper thread.
        assert runner.engines[0].stopping.wait(10)
        assert [e.reasons for e in runner.engines] == [["SIGINT received"]]
        assert not commit.is_set()  # the run is still committing: nobody waited for it
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        commit.set()
        # Wait on the run itself: before Python 3.13 a KeyboardInterrupt that cuts
        # a Thread.join short marks the thread stopped, so the pool's join may not.
        for entry in scheduler._entries.values():
            if entry.running is not None:
                entry.running.result(timeout=30)
        scheduler.shutdown()
    assert [e.what for e in scheduler.events if e.connection == "long"][-1] == "stopped"


def test_a_run_due_after_the_stop_is_not_started(tmp_path: Path) -> None:
    path = tmp_path / "late.yaml"
    path.write_text(yaml.safe_dump({"source": {"type": "sample", "config": {"users": 10}},
                                    "metadata_store": f"sqlite:///{tmp_path / 'meta.db'}"}))
    runs = RunsInProgress()
    runs.request_stop("SIGTERM received")
    outcome = run_sync(load_connection(path), runs)
    assert outcome.status == "skipped"
    assert outcome.error == "not started: serve is stopping (SIGTERM received)"
    assert not (tmp_path / "meta.db").exists()  # no store opened, no run recorded
