"""A Delta history checkpoint whose table takes another writer's commit between the read
of the versions it closes and its MERGE (issue 38).

The MERGE sets a closed version's columns back from the copy read before it (so it need
not read whole rows of the table), so that copy must be the table's as the MERGE finds it:
here another writer blanks every current version's ``email`` (a privacy job, say) right
after the read, and the closed versions must keep the blank, not the value read before.
Fails when the checkpoint does not read its table again after a commit came meanwhile.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from headwater import _events
from tests.integration._connections import connection_file, sync

pytestmark = pytest.mark.spark

STREAM = {"name": "users", "sync_mode": "incremental", "destination_sync_mode": "history",
          "cursor_field": "updated_at", "primary_key": ["id"]}


def source(generation: int) -> dict[str, Any]:
    return {"seed": 3, "users": 40, "orders": 0, "updates_per_generation": 10,
            "new_per_generation": 0, "generation": generation}


def test_a_commit_between_the_read_and_the_merge_is_not_undone(tmp_path: Path,
                                                                  spark: Any) -> None:
    sync(connection_file(tmp_path, name="scrub", source=source(0), streams=[STREAM]))
    table = tmp_path / "lake" / "users"
    blanked: list[str] = []

    def blank(moment: str) -> None:
        if moment == "history-closing-read" and not blanked:
            blanked.append(moment)
            spark.sql(f"UPDATE delta.`{table}` SET email = 'blanked' WHERE _hw_is_current")

    _events.listen(blank)
    try:
        sync(connection_file(tmp_path, name="scrub", source=source(1), streams=[STREAM]))
    finally:
        _events.forget(blank)
    assert blanked
    rows = spark.read.format("delta").load(str(table)).collect()
    closed = [r for r in rows if not r._hw_is_current]
    assert len(closed) == 10 and len(rows) == 50
    assert {r.email for r in closed} == {"blanked"}
    assert sum(r._hw_is_current for r in rows) == 40
