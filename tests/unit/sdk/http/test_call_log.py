"""Call logs count a call until one window after its answer, in one process and through Redis.

The case that broke the admission-stamped limiter in CI: a call admitted at
``t`` reaches the server late; a call admitted one window after ``t`` must
still wait, because the server sees both inside one window.
"""

from __future__ import annotations

import threading
import time
from bisect import bisect_left
from collections.abc import Callable, Iterator

import pytest
import redis

from headwater.sdk.http._call_log import CallLog, LocalCallLog, RedisCallLog
from tests.redis_server import redis_server

WINDOW_S = 0.2
DELAY_S = 0.6  # how long the first call is "on its way": three windows

MakeLog = Callable[[int, float, float], CallLog]


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url


@pytest.fixture(params=["local", "redis"])
def make_log(request: pytest.FixtureRequest) -> MakeLog:
    if request.param == "local":
        return LocalCallLog
    client = redis.Redis.from_url(request.getfixturevalue("redis_url"))
    key = f"test:{request.node.name}:{time.monotonic_ns()}"
    return lambda calls, window_s, lease_s: RedisCallLog(client, key, calls, window_s, lease_s)


def test_a_delayed_call_holds_the_budget_until_one_window_after_its_answer(
        make_log: MakeLog) -> None:
    log = make_log(1, WINDOW_S, 30.0)
    reserved, answered = threading.Event(), threading.Event()
    answered_at: list[float] = []

    def slow_call() -> None:
        token = log.reserve()
        reserved.set()
        time.sleep(DELAY_S)  # admitted, then delayed before the server answers
        answered_at.append(time.monotonic())
        log.settle(token)
        answered.set()

    first = threading.Thread(target=slow_call)
    first.start()
    assert reserved.wait(30)
    log.reserve()  # blocks while the first call is in flight and one window after
    admitted_at = time.monotonic()
    first.join()
    assert answered.is_set()
    assert admitted_at - answered_at[0] >= WINDOW_S - 0.01


def test_calls_within_the_budget_are_not_held_back(make_log: MakeLog) -> None:
    log = make_log(5, 10.0, 30.0)
    started = time.monotonic()
    for _ in range(5):
        log.settle(log.reserve())
    assert time.monotonic() - started < 5.0  # far less than the 10 s window


def test_a_reservation_never_settled_is_released_after_its_lease(make_log: MakeLog) -> None:
    log = make_log(1, WINDOW_S, 0.3)
    log.reserve()  # its caller "died": never settled
    started = time.monotonic()
    log.settle(log.reserve())
    waited = time.monotonic() - started
    assert 0.3 - 0.05 <= waited < 10.0


def test_threads_never_exceed_the_budget_in_any_window(make_log: MakeLog) -> None:
    calls, window_s = 4, 0.25
    log = make_log(calls, window_s, 30.0)
    arrivals: list[float] = []  # when the "server" saw each call
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(6):
            token = log.reserve()
            time.sleep(0.01)
            with lock:
                arrivals.append(time.monotonic())  # between reserve and settle
            time.sleep(0.01)
            log.settle(token)

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(arrivals) == 24
    arrivals.sort()
    most = max(bisect_left(arrivals, start + window_s) - i for i, start in enumerate(arrivals))
    assert 2 <= most <= calls  # the budget mattered, and was never exceeded
