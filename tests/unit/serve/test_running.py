"""A stop requested on ``RunsInProgress`` reaches the runs going on and those that start later."""

from __future__ import annotations

import threading

from headwater.serve import RunsInProgress


class Engine:
    """Stands in for ``SyncEngine``: records the stop requests it gets."""

    def __init__(self) -> None:
        self.reasons: list[str] = []

    def request_stop(self, reason: str = "stop requested") -> None:
        self.reasons.append(reason)


def test_a_stop_reaches_every_run_in_progress_and_not_the_finished_ones() -> None:
    runs = RunsInProgress()
    finished, first, second = Engine(), Engine(), Engine()
    with runs.running(finished):
        pass
    with runs.running(first), runs.running(second):
        assert runs.stop_reason is None
        runs.request_stop("SIGTERM received")
        assert first.reasons == second.reasons == ["SIGTERM received"]
    assert finished.reasons == []
    assert runs.stop_reason == "SIGTERM received"


def test_a_run_that_starts_after_the_stop_is_stopped_on_entry() -> None:
    runs = RunsInProgress()
    runs.request_stop("SIGINT received")
    late = Engine()
    with runs.running(late):
        assert late.reasons == ["SIGINT received"]


def test_the_first_reason_is_kept_and_a_second_request_asks_again() -> None:
    runs = RunsInProgress()
    engine = Engine()
    with runs.running(engine):
        runs.request_stop("SIGTERM received")
        runs.request_stop("SIGINT received")
    assert engine.reasons == ["SIGTERM received", "SIGTERM received"]
    assert runs.stop_reason == "SIGTERM received"


def test_runs_registering_on_other_threads_during_a_stop_are_all_stopped() -> None:
    runs = RunsInProgress()
    engines = [Engine() for _ in range(40)]
    entered = threading.Barrier(len(engines) + 1)
    leave = threading.Event()

    def run(engine: Engine) -> None:
        entered.wait(10)
        with runs.running(engine):
            assert leave.wait(10)

    threads = [threading.Thread(target=run, args=(e,)) for e in engines]
    for thread in threads:
        thread.start()
    entered.wait(10)  # every thread is about to register, some will be after the stop
    runs.request_stop("SIGTERM received")
    leave.set()
    for thread in threads:
        thread.join(10)
    assert all(e.reasons and set(e.reasons) == {"SIGTERM received"} for e in engines)
