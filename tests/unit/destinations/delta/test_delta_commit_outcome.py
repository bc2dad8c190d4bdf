"""A Delta commit that raised: landed, failed, or unknown, by what the lookup of its marker says.

The lookup *answering* "not there" (no tagged commit, or no table at all: a
staging table's first commit) makes the commit a plain failure; the lookup
*raising* anything else (the store unreachable, credentials refused) leaves the
outcome unknown, which the engine must not count as failed.  Spark's errors for
a missing table are the ones Delta 4.4 raises (checked against a real session in
tests/integration/destinations/delta/test_delta_unknown_outcome.py).
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from pyspark.errors import AnalysisException

from headwater.destinations._base import CommitMarker, PublishMarker
from headwater.destinations.delta import _commit_lookup as delta
from headwater.destinations.delta import _delta_rs
from headwater.errors import (
    CommitOutcomeUnknown,
    CommitOutcomeUnknownError,
    DestinationError,
    ExitCode,
)

MARKER = CommitMarker(app_id="headwater/s/conn/users/0", version=4, run_id="run-1",
                      stream="users", checkpoint_index=4, attempt=1)
#: Stands in for the session: only ``sparkContext`` is read, for a local folder.
SPARK: Any = SimpleNamespace(sparkContext=object())


class _SparkSays(AnalysisException):
    """An AnalysisException with a given error condition, as Delta raises them."""

    def __init__(self, condition: str) -> None:
        super().__init__(message=f"[{condition}] ...")
        self._condition = condition

    def getCondition(self) -> str:
        return self._condition


def _lookup_raises(monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    def lookup(*args: Any, **kwargs: Any) -> Any:
        raise error

    monkeypatch.setattr(delta, "_tagged_commit", lookup)


def _after(location: str = "/nowhere") -> Any:
    return delta._after_error(SPARK, location, MARKER, OSError("connection reset"),
                              f"commit of checkpoint 4 to {location}")


@pytest.mark.parametrize("condition", ["DELTA_TABLE_ONLY_OPERATION", "DELTA_MISSING_DELTA_TABLE",
                                       "DELTA_INVALID_PARTITION_PATH"])
def test_a_lookup_spark_answers_with_no_table_makes_a_plain_failure(
        monkeypatch: pytest.MonkeyPatch, condition: str) -> None:
    _lookup_raises(monkeypatch, _SparkSays(condition))
    with pytest.raises(DestinationError, match=r"commit of checkpoint 4 .* failed") as raised:
        _after()
    assert not isinstance(raised.value, CommitOutcomeUnknown)


@pytest.mark.parametrize("error", [
    OSError("Generic S3 error: connection refused"),
    _SparkSays("DELTA_LOG_FILE_NOT_FOUND_FOR_STREAMING_SOURCE"),  # any other condition
    PermissionError("403 Forbidden"),
])
def test_a_lookup_that_raises_otherwise_leaves_the_outcome_unknown(
        monkeypatch: pytest.MonkeyPatch, error: BaseException) -> None:
    _lookup_raises(monkeypatch, error)
    with pytest.raises(CommitOutcomeUnknownError) as raised:
        _after()
    unknown = raised.value
    assert isinstance(unknown, DestinationError) and unknown.exit_code == ExitCode.FAILED
    assert (unknown.stream, unknown.checkpoint) == ("users", 4)
    text = str(unknown)
    assert "connection reset" in text and type(error).__name__ in text
    assert "could not check whether checkpoint 4 of stream users landed" in text
    assert "the next sync resumes this run and checks again" in text


def test_no_table_in_a_local_folder_is_an_answer_of_delta_rs(tmp_path: Path) -> None:
    """delta-rs reads a local folder: a missing table is None, not an error."""
    with pytest.raises(DestinationError) as raised:
        _after(str(tmp_path / "not-a-table"))
    assert not isinstance(raised.value, CommitOutcomeUnknown)


def test_a_log_delta_rs_cannot_read_leaves_the_outcome_unknown(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def unreadable(*args: Any, **kwargs: Any) -> Any:
        raise OSError("Generic LocalFileSystem error: permission denied")

    monkeypatch.setattr(_delta_rs, "history", unreadable)
    with pytest.raises(CommitOutcomeUnknownError, match="permission denied"):
        _after(str(tmp_path))


def test_a_commit_found_by_its_marker_counts_as_landed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(delta, "_tagged_commit", lambda *a, **k: (7, {"numOutputRows": "5"},
                                                                  MARKER.tag, "delta-rs.1"))
    landed = _after()
    assert (landed.version, landed.rows, landed.already_committed) == (7, 5, False)


def test_a_publish_whose_lookup_raises_has_an_unknown_outcome(
        monkeypatch: pytest.MonkeyPatch) -> None:
    marker = PublishMarker(app_id="headwater/s/conn/users/publish", version=9, run_id="run-1",
                           stream="users", checkpoints=(8, 9))

    def unreachable(*args: Any, **kwargs: Any) -> Any:
        raise OSError("no route to host")

    monkeypatch.setattr(delta, "_published_commit", unreachable)
    with pytest.raises(CommitOutcomeUnknownError,
                       match="could not check whether the publish of stream users landed"):
        delta._publish_after_error(SPARK, "/t", marker, OSError("reset"))
    monkeypatch.setattr(delta, "_published_commit", lambda *a, **k: None)
    assert delta._publish_after_error(SPARK, "/t", marker, OSError("reset")) is None
