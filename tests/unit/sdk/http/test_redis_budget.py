"""One call budget shared exactly by several processes through a real redis-server."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

from headwater.sdk.http import BearerAuth, CallBudget, HttpClient, HttpSettings
from tests.api_server import TOKEN, ApiServer
from tests.redis_server import redis_server

BUDGET = CallBudget(calls=10, period_s=0.5)


def _calls(url: str, redis_url: str, count: int) -> None:
    settings = HttpSettings(base_url=url, auth=BearerAuth(TOKEN), budgets=(BUDGET,),
                            redis_url=redis_url)
    # tasks=2 would halve the budget without Redis; with Redis the whole budget is shared.
    with HttpClient(settings, tasks=2) as http:
        for _ in range(count):
            http.get("/v3/surveys", {"per_page": 1})


def test_processes_share_one_budget_through_redis(tmp_path: Path, api: ApiServer) -> None:
    context = multiprocessing.get_context("spawn")
    with redis_server(tmp_path) as redis_url:
        workers = [context.Process(target=_calls, args=(api.url, redis_url, 15))
                   for _ in range(3)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(timeout=120)
        assert [w.exitcode for w in workers] == [0, 0, 0]
    assert len(api.calls) == 45
    assert api.max_calls_in_window(BUDGET.period_s) <= BUDGET.calls
    # The budget was used, not just split: some window saw more than one process's half.
    assert api.max_calls_in_window(BUDGET.period_s) > BUDGET.calls // 2
