"""An Iceberg commit that raised: landed, failed, or unknown, by what the marker's lookup says.

The lookup answering (no tagged snapshot, or no table) makes a plain failure,
with the error's kind kept (a refusal stays an AuthenticationError, exit 3); a
lookup that raises leaves the outcome unknown
(:class:`~headwater.errors.CommitOutcomeUnknown`), still of the same kind.
"""

from __future__ import annotations

import threading
from types import SimpleNamespace
from typing import Any

import pytest

from headwater.destinations._base import CommitMarker, CommitResult
from headwater.destinations.iceberg import _commit, _markers
from headwater.destinations.iceberg import _destination as iceberg
from headwater.destinations.iceberg._staging import Staging
from headwater.errors import (
    AuthenticationError,
    CommitOutcomeUnknown,
    CommitOutcomeUnknownError,
    DestinationError,
    ExitCode,
    RefusedCommitOutcomeUnknown,
)

MARKER = CommitMarker(app_id="headwater/s/conn/users/0", version=4, run_id="run-1",
                      stream="users", checkpoint_index=4, attempt=1)
REFUSED = AuthenticationError("the catalog refused a commit (forbidden)",
                              field="destination.config.catalog.credential")
WHAT = "commit of checkpoint 4 to ns.users"


def _destination(load_table: Any) -> Any:
    return SimpleNamespace(load_table=load_table)


def _raises(error: BaseException) -> Any:
    def load(*args: Any) -> Any:
        raise error
    return load


def test_no_marker_or_no_table_is_a_plain_failure() -> None:
    for load in (lambda stream: None,
                 lambda stream: SimpleNamespace(snapshots=lambda: [])):
        with pytest.raises(DestinationError) as raised:
            iceberg._after_error(_destination(load), "users", MARKER, OSError("reset"), WHAT)
        assert not isinstance(raised.value, CommitOutcomeUnknown)


def test_a_lookup_that_raises_leaves_the_outcome_unknown() -> None:
    destination = _destination(_raises(ConnectionError("catalog unreachable")))
    with pytest.raises(CommitOutcomeUnknownError) as raised:
        iceberg._after_error(destination, "users", MARKER, OSError("reset"), WHAT)
    text = str(raised.value)
    assert "catalog unreachable" in text and "reset" in text
    assert "could not check whether checkpoint 4 of stream users landed" in text
    assert raised.value.exit_code == ExitCode.FAILED


def test_a_refused_commit_whose_lookup_is_refused_too_is_unknown_and_still_exit_3() -> None:
    destination = _destination(_raises(AuthenticationError("refused again")))
    with pytest.raises(RefusedCommitOutcomeUnknown) as raised:
        iceberg._after_error(destination, "users", MARKER, REFUSED, WHAT)
    unknown = raised.value
    assert isinstance(unknown, AuthenticationError) and isinstance(unknown, CommitOutcomeUnknown)
    assert unknown.exit_code == ExitCode.AUTHENTICATION
    assert unknown.context["field"] == "destination.config.catalog.credential"
    assert "looking it up in the table failed too (refused)" in str(unknown)
    assert (unknown.stream, unknown.checkpoint) == ("users", 4)


def test_a_refused_commit_whose_lookup_answers_not_there_stays_a_plain_refusal() -> None:
    with pytest.raises(AuthenticationError, match="nothing of it landed") as raised:
        _commit.refused_commit(REFUSED, WHAT, lambda: None, stream="users", checkpoint=4)
    assert not isinstance(raised.value, CommitOutcomeUnknown)


def test_a_refused_commit_found_by_its_marker_counts_as_landed() -> None:
    found = _markers.TaggedSnapshot(snapshot_id=11, tag=MARKER.tag)
    assert _commit.refused_commit(REFUSED, WHAT, lambda: found, stream="users") is found


def test_a_staging_commit_whose_lookup_raises_is_unknown() -> None:
    staging = Staging(lambda stream: None, threading.RLock())

    def attempt() -> CommitResult:
        raise OSError("connection reset")

    def landed() -> CommitResult | None:
        raise ConnectionError("catalog unreachable")

    with pytest.raises(CommitOutcomeUnknownError,
                       match="could not check whether checkpoint 3 of stream users landed"):
        staging._committing("users", "staging checkpoint 3 of users", attempt, landed,
                            checkpoint=3)
    with pytest.raises(DestinationError) as raised:
        staging._committing("users", "staging checkpoint 3 of users", attempt, lambda: None,
                            checkpoint=3)
    assert not isinstance(raised.value, CommitOutcomeUnknown)
