"""The ``sync --json`` document of a command that ran one run, or resumed one and ran another."""

from __future__ import annotations

import json

import pytest

from headwater.engine import StreamStats, SyncResult
from headwater.engine._results import sync_document


def _result(run_id: str, *, resumed: bool, attempt: int, written: int) -> SyncResult:
    stats = StreamStats(name="users", mode="incremental+append", status="succeeded",
                        records_written=written)
    return SyncResult(run_id=run_id, connection="shop", status="succeeded", resumed=resumed,
                      attempt=attempt, streams=[stats])


def test_the_top_level_is_the_newest_run_and_runs_lists_them_oldest_first() -> None:
    resumed = _result("old", resumed=True, attempt=2, written=150)
    new = _result("new", resumed=False, attempt=1, written=3_600)
    document = sync_document([resumed, new])
    assert document["run_id"] == "new" and document["resumed"] is False
    assert document["streams"][0]["records_written"] == 3_600
    assert [(r["run_id"], r["resumed"], r["attempt"]) for r in document["runs"]] == [
        ("old", True, 2), ("new", False, 1)]
    assert {k: v for k, v in document.items() if k != "runs"} == new.to_dict()
    json.dumps(document)  # one JSON document, as printed


def test_one_run_is_its_own_document_plus_runs() -> None:
    only = _result("only", resumed=False, attempt=1, written=10)
    assert sync_document([only]) == {**only.to_dict(), "runs": [only.to_dict()]}
    with pytest.raises(ValueError):
        sync_document([])

