"""A split call budget holds when tasks take turns in more worker processes than run at once.

Spark runs each task's Python in the idle worker process waiting longest, and its
pool can hold more processes than tasks run at once.  Here four real processes
play that pool for a budget split over two tasks: two of them spend their shares,
end their tasks, and the two others start at once.  A share kept in a process's
memory would let the second pair spend the whole budget again inside the first
pair's window (the loopback API counts what it receives and answers 429 beyond
its limit); a share kept on the machine makes them wait.
"""

from __future__ import annotations

import multiprocessing
from multiprocessing.synchronize import Event
from typing import Any

from headwater.sdk.http import BearerAuth, CallBudget, HttpClient, HttpSettings
from tests.api_server import TOKEN, ApiServer

LIMIT, PERIOD_S, TASKS = 10, 1.0, 2
WINDOW = {"start_modified_at": 0, "end_modified_at": 2**40, "per_page": 5}


def _task(url: str, go: Event, done: Event) -> None:
    """One Spark task in one worker process: its share of calls, then the task ends."""
    go.wait(60)
    budget = CallBudget(calls=LIMIT, period_s=PERIOD_S)
    settings = HttpSettings(base_url=url, auth=BearerAuth(TOKEN), budgets=(budget,))
    with HttpClient(settings, tasks=TASKS) as http:
        for _ in range(LIMIT // TASKS):
            http.get("/v3/surveys", WINDOW)
    done.set()


def test_tasks_in_new_processes_continue_the_window_of_those_that_ended(api: ApiServer) -> None:
    api.limit, api.period_s = LIMIT, PERIOD_S
    spawn: Any = multiprocessing.get_context("spawn")
    pool = [(spawn.Event(), spawn.Event()) for _ in range(4)]
    workers = [spawn.Process(target=_task, args=(api.url, go, done)) for go, done in pool]
    for worker in workers:
        worker.start()  # the pool is up before any task runs, as Spark's workers are
    try:
        first, second = pool[:2], pool[2:]
        for go, _ in first:
            go.set()
        for _, done in first:
            assert done.wait(60)
        for go, _ in second:  # the next tasks take the processes idle the longest
            go.set()
        for _, done in second:
            assert done.wait(60)
    finally:
        for worker in workers:
            worker.join(30)
            if worker.is_alive():
                worker.kill()
    assert [worker.exitcode for worker in workers] == [0, 0, 0, 0]
    assert len(api.calls) == 2 * LIMIT
    assert api.rate_limited == 0, "the API had to refuse calls over its limit"
    assert api.max_calls_in_window() <= LIMIT
