"""A stopped run is not a failed one, for the Airflow operator and sensor (no Airflow needed)."""

from __future__ import annotations

import pytest

from headwater.integrations._outcome import (
    failure_message,
    is_stopped,
    sensor_verdict,
    stopped_message,
    warned_message,
)

STOPPED = {"run_id": "20260101T000000Z-abc123", "status": "stopped", "kind": "sync",
           "stop_reason": "SIGTERM received: stopped after the commits in flight, checkpoints "
                          "committed: users 2 of 5; the next sync continues this run",
           "streams": [{"name": "users", "status": "stopped", "error": None}]}


def test_exit_130_with_a_stopped_summary_is_a_stop_and_nothing_else_is() -> None:
    assert is_stopped(130, STOPPED)
    assert not is_stopped(1, {**STOPPED, "status": "failed"})
    # A second signal aborts: exit 130 without a stopped summary is not a clean stop.
    assert not is_stopped(130, {"status": "error", "error": {"message": "interrupted"}})


def test_a_stopped_sync_says_it_did_not_fail_and_that_a_retry_resumes_it() -> None:
    message = stopped_message(STOPPED, "sync", "/dags/orders.yaml")
    assert message.startswith("headwater run 20260101T000000Z-abc123 stopped, it did not fail: "
                              "SIGTERM received")
    assert message.endswith("A retry of this task resumes it.")


@pytest.mark.parametrize("command", ["replay", "backfill"])
def test_a_stopped_replay_or_backfill_names_the_sync_that_finishes_it(command: str) -> None:
    message = stopped_message({**STOPPED, "kind": command}, command, "/dags/orders.yaml")
    assert f"`headwater sync /dags/orders.yaml` finishes this {command}" in message
    assert "a retry of this task is refused" in message


def test_failures_name_their_meaning_and_the_failed_streams() -> None:
    failed = {"run_id": "r", "status": "failed",
              "streams": [{"name": "users", "status": "failed", "error": "HTTP 500"},
                          {"name": "orders", "status": "succeeded", "error": None}]}
    assert failure_message(1, failed) == "headwater run r: the run failed: users: HTTP 500"
    warned = {**failed, "streams": [*failed["streams"], {"name": "events", "status": "warned"}]}
    assert failure_message(1, warned) == "headwater run r: the run failed: users: HTTP 500"
    assert failure_message(2, {"error": {"message": "no such file"}}) == \
        "headwater: the connection file or a config is wrong: no such file"


@pytest.mark.parametrize(("status", "verdict"), [("running", "wait"), ("stopped", "wait"),
                                                 ("succeeded", "succeeded"),
                                                 ("warned", "succeeded"),
                                                 ("failed", "failed")])
def test_the_sensor_waits_for_a_stopped_run_as_for_a_running_one(status: str,
                                                                 verdict: str) -> None:
    assert sensor_verdict(status) == verdict


def test_a_warned_runs_message_lists_each_streams_warnings() -> None:
    document = {"streams": [{"name": "a", "warnings": ["x", "y"]}, {"name": "b"}]}
    assert warned_message(document) == "a: x; a: y"
