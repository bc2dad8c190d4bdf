"""Offset ranges and offsets as state: cutting a topic partition's new offsets into
partitions, and the cursor that turns closed ranges into the next offset to read."""

from __future__ import annotations

import json

import pytest

from headwater.connectors.kafka._offsets import OffsetCursor, Span, cut, partition_id
from headwater.errors import StateError
from headwater.sdk import Partition


def _range(number: int, low: int, high: int, base: int) -> Partition:
    return Partition("t", partition_id("t", number, low, high),
                     {"topic": "t", "partition": number, "base": base, "from": low,
                      "upto": high})


def test_new_offsets_are_cut_into_ranges_of_at_most_the_size() -> None:
    assert cut(Span(0, 10, 10, 35), [], 10) == [(10, 20), (20, 30), (30, 35)]
    assert cut(Span(0, 10, 10, 10), [], 10) == []
    assert cut(Span(0, 0, 0, 3), [], 100) == [(0, 3)]


def test_committed_ranges_above_the_next_offset_are_not_read_again() -> None:
    # [20, 30) and [40, 45) landed before [10, 20): only the gaps are planned.
    assert cut(Span(0, 10, 10, 50), [[20, 30], [40, 45]], 8) == [
        (10, 18), (18, 20), (30, 38), (38, 40), (45, 50)]
    # a committed range past the end (a plan on a slower replica) leaves nothing below
    assert cut(Span(0, 0, 0, 5), [[3, 9]], 10) == [(0, 3)]


def test_a_size_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one offset"):
        cut(Span(0, 0, 0, 5), [], 0)


def test_ranges_closing_out_of_order_never_claim_the_gap_below_them() -> None:
    cursor = OffsetCursor(None)
    cursor.close_partition(_range(0, 20, 30, base=0))
    cursor.close_partition(_range(1, 0, 7, base=0))
    assert cursor.state() == {"state_type": "kafka-offsets", "offsets": {"0": 0, "1": 7},
                              "done": {"0": [[20, 30]]}}
    assert cursor.next_offset(0) == 0 and cursor.done(0) == [[20, 30]]
    cursor.close_partition(_range(0, 0, 20, base=0))
    assert cursor.state() == {"state_type": "kafka-offsets", "offsets": {"0": 30, "1": 7}}


def test_state_reads_back_through_json_to_the_same_cursor() -> None:
    cursor = OffsetCursor(None)
    cursor.close_partition(_range(0, 5, 9, base=0))
    stored = json.loads(json.dumps(cursor.state()))
    again = OffsetCursor(stored)
    assert again.state() == cursor.state()
    again.close_partition(_range(0, 0, 5, base=0))
    assert again.state()["offsets"] == {"0": 9} and "done" not in again.state()


def test_an_empty_range_moves_the_state_to_its_base() -> None:
    # start: latest on a first sync, or offsets the log lost: nothing read, the state moves.
    cursor = OffsetCursor({"state_type": "kafka-offsets", "offsets": {"0": 3}})
    cursor.close_partition(_range(0, 100, 100, base=100))
    assert cursor.next_offset(0) == 100
    # a stale base (a resumed plan made before the state moved) never moves it back
    cursor.close_partition(_range(0, 50, 60, base=3))
    assert cursor.next_offset(0) == 100 and cursor.done(0) == []


@pytest.mark.parametrize("state", [
    {"state_type": "integer-range", "slices": []},
    {"state_type": "kafka-offsets", "offsets": {"zero": 1}},
    {"state_type": "kafka-offsets", "offsets": {"0": 1}, "done": {"0": [[1]]}},
])
def test_state_of_another_shape_is_refused(state: dict[str, object]) -> None:
    with pytest.raises(StateError):
        OffsetCursor(state)


def test_a_partition_without_an_offset_range_is_refused() -> None:
    with pytest.raises(StateError, match="not a Kafka offset range"):
        OffsetCursor(None).close_partition(Partition("t", "x", {"start": 1, "end": 2}))
