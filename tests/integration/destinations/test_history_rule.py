"""``_history_rule.changes`` on one checkpoint's events, in the shared Spark session (no
sync): ties of one moment (the same cursor) leave only the last by the tie rule (the
later partition in the plan, then the later record), a null cursor is a moment of its
own and comes first, each version is valid until its key's next moment, and the table's
stored versions make older events open nothing and close the current version."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pytest

from headwater.destinations._history_rule import changes, merge_rows

pytestmark = pytest.mark.spark

T = [datetime(2026, 1, 1, h) for h in range(6)]
COLUMNS = ["id", "v", "updated_at", "_hw_checkpoint", "_hw_partition_id", "_hw_raw_id"]
#: (id, v, cursor, checkpoint, partition, record): key 1 has two ties at T[1] in two
#: partitions (p2 comes later in the plan) and two in one partition (record 10 > 9);
#: key 2 a null cursor and a later change; key 3 one change older than its stored one.
EVENTS = [(1, "a", T[0], 1, "p1", "d-1"), (1, "b-early", T[1], 1, "p2", "d-2"),
          (1, "b-late", T[1], 1, "p1", "d-3"), (1, "c", T[2], 1, "p1", "d-9"),
          (1, "c-last", T[2], 1, "p1", "d-10"),
          (2, "x", None, 1, "p1", "d-4"), (2, "y", T[3], 1, "p1", "d-5"),
          (3, "old", T[0], 1, "p1", "d-6"), (3, "new", T[5], 1, "p1", "d-7")]
PLANNED = "2026-02-01T00:00:00+00:00"


def test_ties_null_cursors_validity_and_stored_versions(spark: Any) -> None:
    """One call (each costs Spark jobs): keys 1 and 2 have no stored version, key 3 one
    current since T[4]."""
    stored = spark.createDataFrame(
        [(3, T[4], T[4], None, True)],
        "id long, updated_at timestamp, _hw_valid_from timestamp, _hw_valid_to timestamp, "
        "_hw_is_current boolean")
    found = changes(spark.createDataFrame(EVENTS, COLUMNS), stored, keys=["id"],
                    cursor="updated_at", partition_order=["p2", "p1"], planned_at=PLANNED)
    opened = sorted((r.id, r.v, r._hw_valid_from, r._hw_valid_to, r._hw_is_current)
                    for r in found.opened.collect())
    assert [(i, v) for i, v, *_ in opened] == [
        (1, "a"), (1, "b-late"), (1, "c-last"), (2, "x"), (2, "y"), (3, "new")]
    by_version = {(i, v): (begin, end, current) for i, v, begin, end, current in opened}
    assert by_version[(1, "a")] == (T[0], T[1], False)
    assert by_version[(1, "b-late")] == (T[1], T[2], False)  # p1 is later than p2 in the plan
    assert by_version[(1, "c-last")] == (T[2], None, True)  # record 10 after record 9
    assert by_version[(2, "x")] == (datetime(2026, 2, 1), T[3], False)  # null: the run's time
    assert by_version[(3, "new")] == (T[5], None, True)  # "old" is older than the stored one
    assert sorted(tuple(r) for r in found.closed.collect()) == [(3, T[4], T[5])]

    # The Delta MERGE's one frame holds the same two sides, and a closing row carries
    # the version it closes as stored (the MERGE sets it back from there).
    rows = merge_rows(spark.createDataFrame(EVENTS, COLUMNS), stored, keys=["id"],
                      cursor="updated_at", partition_order=["p2", "p1"], planned_at=PLANNED,
                      action="_hw_action").collect()
    assert sorted((r.id, r.v, r._hw_valid_from, r._hw_valid_to, r._hw_is_current)
                  for r in rows if r._hw_action == "open") == opened
    assert all(r._hw_was is None for r in rows if r._hw_action == "open")
    assert [(r.id, r.v, r._hw_valid_from, r._hw_valid_to, r._hw_is_current, r._hw_was.asDict())
            for r in rows if r._hw_action == "close"] == [
        (3, None, T[4], T[5], False, {"id": 3, "updated_at": T[4], "_hw_valid_from": T[4],
                                      "_hw_valid_to": None, "_hw_is_current": True})]


def test_null_keys_are_keys_and_meet_no_stand_in(spark: Any) -> None:
    """A null key part is a key like any other (``<=>``), also where the rule matches keys
    by their never-null stand-ins (``_stand_ins``: a constant for null, and a null flag):
    the null key ``(None, None)`` closes its own stored version, and ``(0, "")``, whose
    stand-in values are the same constants, neither closes it nor is held back by it."""
    columns = ["id", "region", "v", "updated_at", "_hw_checkpoint", "_hw_partition_id",
               "_hw_raw_id"]
    events = [(None, None, "n1", T[1], 1, "p1", "d-1"), (0, "", "z", T[1], 1, "p1", "d-2"),
              (0, None, "zn", T[2], 1, "p1", "d-3")]
    stored = spark.createDataFrame(
        [(None, None, T[0], T[0], None, True), (0, None, T[3], T[3], None, True)],
        "id long, region string, updated_at timestamp, _hw_valid_from timestamp, "
        "_hw_valid_to timestamp, _hw_is_current boolean")
    rows = merge_rows(spark.createDataFrame(events, columns), stored, keys=["id", "region"],
                      cursor="updated_at", partition_order=["p1"], planned_at=PLANNED,
                      action="_hw_action").collect()
    assert sorted(((r.id, r.region, r.v, r._hw_valid_from, r._hw_is_current)
                   for r in rows if r._hw_action == "open"), key=repr) == sorted([
        (None, None, "n1", T[1], True), (0, "", "z", T[1], True)], key=repr)
    assert [(r.id, r.region, r._hw_valid_from, r._hw_valid_to, r._hw_was["updated_at"])
            for r in rows if r._hw_action == "close"] == [(None, None, T[0], T[1], T[0])]
