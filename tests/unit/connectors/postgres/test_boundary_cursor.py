"""The boundary cursor: keys read at each sync's top value, kept for committed partitions only."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.connectors.postgres._boundary import BoundaryCursor
from headwater.errors import StateError
from headwater.sdk import IntegerStateConverter, Partition


def cursor(state: Any) -> BoundaryCursor:
    return BoundaryCursor(cursor_field="n", converter=IntegerStateConverter(), state=state,
                          start=0)


def window(start: int, end: int, **params: Any) -> Partition:
    return Partition("t", f"t:{start}/{end}", {"start": start, "end": end, **params})


SYNCED = {"state_type": "integer-range", "cursor_field": "n", "slices": [{"start": 0, "end": 10}],
          "boundary": [{"end": 10, "keys": ["[1]", "[2]"]}]}


def test_state_round_trips_and_older_state_reads_as_unknown_keys() -> None:
    assert cursor(SYNCED).state() == SYNCED
    assert cursor(SYNCED).tops() == [(10, ["[1]", "[2]"])]
    older = {k: v for k, v in SYNCED.items() if k != "boundary"}
    assert cursor(older).tops() == [(10, None)]  # re-read all of [9, 10), as before
    assert cursor({"n": 10}).tops() == [(10, None)]
    assert cursor(None).tops() == []
    assert cursor(None).state()["boundary"] == []


def test_partitions_committed_out_of_order_keep_every_boundary_they_need() -> None:
    moving = cursor(SYNCED)
    reread = window(9, 15, seen_at=9, seen_keys=["[1]", "[2]"])
    top = window(15, 21, top_at=20, top_keys=["[7]"])
    moving.close_partition(top)  # the top window commits first
    assert moving.tops() == [(10, ["[1]", "[2]"]), (21, ["[7]"])]
    # A sync ending here (the re-read failed) re-reads both values next time.
    assert cursor(moving.state()).tops() == [(10, ["[1]", "[2]"]), (21, ["[7]"])]
    moving.close_partition(reread)
    assert moving.tops() == [(21, ["[7]"])]  # 10 is inside a range now, for good
    assert moving.state()["boundary"] == [{"end": 21, "keys": ["[7]"]}]


def test_a_failed_top_window_leaves_no_boundary_at_an_inner_cut() -> None:
    moving = cursor(SYNCED)
    moving.close_partition(window(9, 15, seen_at=9, seen_keys=["[1]", "[2]"]))
    # 15 was a cut below the plan's top value: its rows were complete, nothing to re-read.
    assert moving.tops() == []
    assert moving.state()["slices"] == [{"start": 0, "end": 15}]


def test_the_same_top_value_again_replaces_its_keys() -> None:
    moving = cursor(SYNCED)
    moving.close_partition(window(9, 10, seen_at=9, seen_keys=["[1]", "[2]"], top_at=9,
                                  top_keys=["[1]", "[2]", "[3]"]))
    assert moving.tops() == [(10, ["[1]", "[2]", "[3]"])]
    unknown = cursor(SYNCED)
    unknown.close_partition(window(9, 10, top_at=9, top_keys=None))  # no usable key
    assert unknown.tops() == [(10, None)]


@pytest.mark.parametrize("boundary", [{"end": 10}, [{"keys": []}], [{"end": 10, "keys": [1]}],
                                      [{"end": "x", "keys": None}]])
def test_a_malformed_boundary_is_a_state_error(boundary: Any) -> None:
    with pytest.raises(StateError):
        cursor({**SYNCED, "boundary": boundary})
