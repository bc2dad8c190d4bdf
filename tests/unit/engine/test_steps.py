"""Step timings of a sync (``SyncResult.steps_s``)."""

from __future__ import annotations

import threading

from headwater.engine._steps import StepTimes, seconds_since_process_start


def test_steps_sum_over_threads_and_keep_their_first_order() -> None:
    steps = StepTimes()
    steps.add("plan", 0.25)

    def commit() -> None:
        for _ in range(100):
            steps.add("commit", 0.01)

    threads = [threading.Thread(target=commit) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with steps.step("plan"):
        pass
    figures = steps.to_dict()
    assert list(figures) == ["plan", "commit"]
    assert figures["commit"] == 4.0
    assert 0.25 <= figures["plan"] < 1.0


def test_the_process_has_been_running_for_a_while() -> None:
    seconds = seconds_since_process_start()
    assert seconds is None or seconds > 0
