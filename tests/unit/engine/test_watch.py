"""The --watch loop: back off up to 5 s when nothing is new, sync when something is."""

from __future__ import annotations

import threading

from headwater.engine import SyncResult
from headwater.engine._watch import MAX_BACKOFF_S, MIN_BACKOFF_S, watch


def result(status: str = "succeeded") -> SyncResult:
    return SyncResult(run_id="r", connection="c", status=status, resumed=False, attempt=1)


def test_backs_off_to_five_seconds_and_syncs_each_batch_once() -> None:
    stop = threading.Event()
    polls = iter([False] * 7 + [True] + [False, False, True])
    pauses: list[float] = []
    runs: list[SyncResult] = []

    def has_new() -> bool:
        try:
            return next(polls)
        except StopIteration:
            stop.set()
            return False

    def run() -> SyncResult:
        runs.append(result())
        return runs[-1]

    got = watch(run, has_new, stop, sleep=pauses.append)
    assert got == runs and len(runs) == 2
    assert pauses[:7] == [0.25, 0.5, 1.0, 2.0, 4.0, 5.0, 5.0]
    assert max(pauses) == MAX_BACKOFF_S
    assert pauses[7:9] == [MIN_BACKOFF_S, 2 * MIN_BACKOFF_S]  # reset after a sync


def test_a_failed_sync_waits_the_longest_pause_and_goes_on() -> None:
    stop = threading.Event()
    outcomes = iter(["failed", "succeeded"])
    pauses: list[float] = []

    def run() -> SyncResult:
        status = next(outcomes)
        if status == "succeeded":
            stop.set()
        return result(status)

    got = watch(run, lambda: True, stop, sleep=pauses.append)
    assert [r.status for r in got] == ["failed", "succeeded"]
    assert pauses == [MAX_BACKOFF_S]


def test_a_sync_cut_short_by_a_stop_ends_the_loop_at_once() -> None:
    stop = threading.Event()
    pauses: list[float] = []

    def run() -> SyncResult:
        stop.set()  # what SyncEngine.request_stop does while a sync runs
        return result("stopped")

    got = watch(run, lambda: True, stop, sleep=pauses.append)
    assert [r.status for r in got] == ["stopped"]
    assert pauses == []


def test_a_sync_stopped_by_an_unknown_commit_outcome_waits_then_resumes() -> None:
    """Nobody asked it to stop: the loop goes on, after the longest pause (the destination
    did not answer), and the next round resumes the run."""
    stop = threading.Event()
    outcomes = iter([("stopped", 1), ("succeeded", None)])
    pauses: list[float] = []

    def run() -> SyncResult:
        status, code = next(outcomes)
        if status == "succeeded":
            stop.set()
        done = result(status)
        done.exit_code = code
        return done

    got = watch(run, lambda: True, stop, sleep=pauses.append)
    assert [r.status for r in got] == ["stopped", "succeeded"]
    assert pauses == [MAX_BACKOFF_S]
