"""SIGINT/SIGTERM ask the engine to stop; a second signal goes to the handler from before."""

from __future__ import annotations

import signal
import threading
from typing import Any

import pytest

from headwater.cli._stop import STOPPED_EXIT_CODE, stop_on_signals, sync_exit_code
from headwater.engine import SyncResult


class Aborted(Exception):
    """Raised by the stand-in for PySpark's SIGINT handler (cancel jobs, interrupt)."""


def test_first_signal_requests_a_stop_and_the_second_reaches_the_old_handler() -> None:
    # Whatever handlers were installed before (a SparkContext earlier in the same
    # test run installs its own SIGINT handler) must be back afterwards.
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    old_calls: list[int] = []

    def old_handler(signum: int, frame: Any) -> None:
        old_calls.append(signum)
        raise Aborted

    reasons: list[str] = []
    requested = threading.Event()

    def request_stop(reason: str) -> None:
        reasons.append(reason)
        requested.set()

    signal.signal(signal.SIGINT, old_handler)
    try:
        with stop_on_signals(request_stop):
            signal.raise_signal(signal.SIGTERM)
            assert requested.wait(5)
            assert reasons == ["SIGTERM received"] and old_calls == []
            with pytest.raises(Aborted):
                signal.raise_signal(signal.SIGINT)
            assert old_calls == [signal.SIGINT] and reasons == ["SIGTERM received"]
            # Aborting put the old handlers back at once.
            assert signal.getsignal(signal.SIGINT) is old_handler
        assert signal.getsignal(signal.SIGINT) is old_handler
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
    assert {sig: signal.getsignal(sig) for sig in before} == before


def test_sigint_alone_requests_a_stop_without_raising() -> None:
    before = signal.getsignal(signal.SIGINT)
    requested = threading.Event()
    with stop_on_signals(lambda reason: requested.set()):
        signal.raise_signal(signal.SIGINT)
        assert requested.wait(5)
    assert signal.getsignal(signal.SIGINT) == before


@pytest.mark.parametrize(("status", "code"), [("succeeded", 0), ("warned", 4), ("failed", 1),
                                              ("stopped", STOPPED_EXIT_CODE)])
def test_exit_code_of_a_sync(status: str, code: int) -> None:
    result = SyncResult(run_id="r", connection="c", status=status, resumed=False, attempt=1)
    assert sync_exit_code(result) == code


def test_outside_the_main_thread_the_handlers_are_left_alone() -> None:
    before = signal.getsignal(signal.SIGINT)
    seen: list[Any] = []

    def enter() -> None:
        with stop_on_signals(lambda reason: None):
            seen.append(signal.getsignal(signal.SIGINT))

    thread = threading.Thread(target=enter)
    thread.start()
    thread.join()
    assert seen == [before]
