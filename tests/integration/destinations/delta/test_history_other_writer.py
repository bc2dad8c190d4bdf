"""A Delta history checkpoint whose table takes another writer's commit between the read
of the versions it closes and its commit (issue 38).

Both ways of committing write a closed version from the copy read before (Spark's MERGE
sets its columns back from it, so it need not read whole rows of the table; Headwater's
own commit writes the copy to a new file), so that copy must be the table's as the
commit finds it: here another writer blanks every current version's ``email`` (a
privacy job, say) right after the read, and the closed versions must keep the blank,
not the value read before.  Fails when the checkpoint does not read its table again
after a commit came meanwhile (the MERGE's version check; the own commit's conditional
put of the next log entry).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from headwater import _events
from headwater.destinations.delta._commit_lookup import WRITER_HISTORY, WRITER_SPARK
from headwater.metadata_store import MetadataStore
from tests.integration._connections import connection_file, sync

pytestmark = pytest.mark.spark

STREAM = {"name": "users", "sync_mode": "incremental", "destination_sync_mode": "history",
          "cursor_field": "updated_at", "primary_key": ["id"]}


def source(generation: int) -> dict[str, Any]:
    return {"seed": 3, "users": 40, "orders": 0, "updates_per_generation": 10,
            "new_per_generation": 0, "generation": generation}


@pytest.mark.parametrize("writer", ["auto", "spark"])
def test_a_commit_between_the_read_and_the_commit_is_not_undone(tmp_path: Path, spark: Any,
                                                                writer: str) -> None:
    sync(connection_file(tmp_path, name="scrub", source=source(0), streams=[STREAM],
                         writer=writer))
    table = tmp_path / "lake" / "users"
    blanked: list[str] = []

    def blank(moment: str) -> None:
        if moment == "history-closing-read" and not blanked:
            blanked.append(moment)
            spark.sql(f"UPDATE delta.`{table}` SET email = 'blanked' WHERE _hw_is_current")

    _events.listen(blank)
    try:
        result = sync(connection_file(tmp_path, name="scrub", source=source(1),
                                      streams=[STREAM], writer=writer))
    finally:
        _events.forget(blank)
    assert blanked
    writers = {c.stats["writer"] for c in MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}")
               .list_checkpoints(result.run_id)}
    assert writers == {WRITER_HISTORY if writer == "auto" else WRITER_SPARK}
    rows = spark.read.format("delta").load(str(table)).collect()
    closed = [r for r in rows if not r._hw_is_current]
    assert len(closed) == 10 and len(rows) == 50
    assert {r.email for r in closed} == {"blanked"}
    assert sum(r._hw_is_current for r in rows) == 40
