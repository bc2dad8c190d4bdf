"""A run that met a commit whose outcome is unknown stays resumable and exits with the error's code.

A failed run is finished and the next sync plans anew from the state, writing
again what may have landed; so a commit whose lookup raised too stops the run
(unfinished, like a stop request) whatever else failed, and the command still
says it did not succeed: exit 1, or 3 when credentials were refused.
"""

from __future__ import annotations

from headwater.cli._stop import sync_exit_code
from headwater.destinations._base import CommitMarker
from headwater.engine import StreamStats, SyncResult
from headwater.engine._results import outcome
from headwater.engine._stream_runner import _lookup_failed, _unknown_in, describe_error
from headwater.errors import (
    AuthenticationError,
    CommitOutcomeUnknown,
    CommitOutcomeUnknownError,
    DestinationError,
    ExitCode,
    RefusedCommitOutcomeUnknown,
)

UNKNOWN = ("commit of checkpoint 3 to /t failed (OSError: reset) and looking it up in the "
           "table failed too (OSError: unreachable): could not check whether checkpoint 3 of "
           "stream users landed; the next sync resumes this run and checks again")


def _stats(name: str, status: str, *, error: str | None = None,
           unknown: bool = False) -> StreamStats:
    return StreamStats(name=name, mode="incremental+append", status=status, checkpoints=4,
                       checkpoints_done=2, error=error, outcome_unknown=unknown)


def test_an_unknown_outcome_stops_the_run_even_when_another_stream_failed() -> None:
    stats = [_stats("users", "stopped", error=UNKNOWN, unknown=True),
             _stats("orders", "failed", error="DestinationError: disk full"),
             _stats("events", "stopped")]
    status, error = outcome(stats, "stop requested")
    assert status == "stopped"
    assert error is not None and error.startswith("users: commit of checkpoint 3")
    assert "orders: DestinationError: disk full" in error
    assert "the next sync resumes this run and checks again" in error
    assert "stop requested" not in error  # nobody asked it to stop


def test_a_checkpoint_an_earlier_attempt_left_unchecked_keeps_the_run_stopped() -> None:
    stats = [_stats("users", "failed", error="DestinationError: cannot prepare the table")]
    left = "users: whether checkpoint 3 landed is still unchecked (...)"
    assert outcome(stats, "stop requested", [left]) == (
        "stopped", f"users: DestinationError: cannot prepare the table; {left}")
    # Without it, that failure fails the run as before.
    assert outcome(stats, "stop requested")[0] == "failed"


def test_without_an_unknown_outcome_nothing_changes() -> None:
    assert outcome([_stats("users", "failed", error="boom")], "x") == ("failed", "users: boom")
    assert outcome([_stats("users", "stopped")], "SIGINT received")[0] == "stopped"


def test_the_command_exits_with_the_error_s_code_not_the_stop_s() -> None:
    def result(exit_code: int | None) -> SyncResult:
        return SyncResult(run_id="r", connection="shop", status="stopped", resumed=False,
                          attempt=1, stop_reason=UNKNOWN, exit_code=exit_code)

    assert sync_exit_code(result(None)) == ExitCode.STOPPED
    assert sync_exit_code(result(int(ExitCode.FAILED))) == ExitCode.FAILED
    assert sync_exit_code(result(int(ExitCode.AUTHENTICATION))) == ExitCode.AUTHENTICATION
    assert result(1).to_dict()["outcome_unknown"] is True
    assert "outcome_unknown" not in result(None).to_dict()


def test_the_signal_is_found_behind_the_error_that_carries_it() -> None:
    unknown = CommitOutcomeUnknownError("commit of checkpoint 3 to /t", error="OSError: reset",
                                        lookup="OSError: unreachable", stream="users",
                                        checkpoint=3)
    try:
        try:
            raise unknown
        except CommitOutcomeUnknownError as exc:
            raise RuntimeError("wrapped") from exc
    except RuntimeError as outer:
        assert _unknown_in(outer) is unknown
        assert describe_error(outer) == str(unknown)
    assert _unknown_in(DestinationError("plain")) is None


def test_a_resumed_attempt_s_lookup_that_raises_is_unknown_of_the_same_kind() -> None:
    marker = CommitMarker(app_id="a", version=3, run_id="r", stream="users",
                          checkpoint_index=3, attempt=2)
    refused = _lookup_failed(AuthenticationError("token revoked", field="destination.x"), marker)
    assert isinstance(refused, RefusedCommitOutcomeUnknown)
    assert refused.exit_code == ExitCode.AUTHENTICATION
    assert refused.context["field"] == "destination.x"
    other = _lookup_failed(OSError("unreachable"), marker)
    assert isinstance(other, CommitOutcomeUnknown) and other.exit_code == ExitCode.FAILED
    assert "could not check whether checkpoint 3 of stream users landed" in str(other)


def test_a_lookup_after_a_commit_raised_names_both_errors() -> None:
    """The engine's lookup of a commit that raised (``StreamRunner._landed_despite``)."""
    marker = CommitMarker(app_id="a", version=3, run_id="r", stream="users",
                          checkpoint_index=3, attempt=1)
    unknown = _lookup_failed(OSError("unreachable"), marker,
                             after=ConnectionResetError("answer lost"))
    assert isinstance(unknown, CommitOutcomeUnknownError)
    assert str(unknown).startswith(
        "the commit of checkpoint 3 failed (ConnectionResetError: answer lost) and looking it "
        "up in the table failed too (OSError: unreachable): could not check whether "
        "checkpoint 3 of stream users landed"), str(unknown)
