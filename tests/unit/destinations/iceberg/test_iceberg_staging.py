"""What a staging branch's head says it holds: checkpoints as short ranges, figures summed."""

from __future__ import annotations

import pytest

from headwater.destinations.iceberg._staging import Staged, branch_name, indices, ranges


@pytest.mark.parametrize(("numbers", "text"), [
    ([], ""),
    ([4], "4"),
    ([3, 1, 2], "1-3"),
    ([1, 2, 3, 7, 9, 10], "1-3,7,9-10"),
    ([12, 11, 11], "11-12"),
])
def test_checkpoints_are_written_as_ranges_and_read_back(numbers: list[int], text: str) -> None:
    assert ranges(numbers) == text
    assert indices(text) == set(numbers)


def test_a_thousand_checkpoints_of_one_run_stay_a_few_characters() -> None:
    assert ranges(range(5001, 6001)) == "5001-6000"


def test_what_a_head_holds_is_the_sum_of_what_was_staged_on_it() -> None:
    held = Staged(run_id="r1").adding(7, rows=100, rejected=2, size=4096).adding(
        8, rows=50, rejected=0, size=2048)
    assert held == Staged(run_id="r1", checkpoints=frozenset({7, 8}), rows=150, rejected=2,
                          bytes=6144)
    assert Staged.from_json(held.to_json()) == held
    assert '"checkpoints":"7-8"' in held.to_json()


def test_each_run_stages_on_a_branch_named_after_it() -> None:
    assert branch_name("20261126T003055Z-139901") == "headwater-staging-20261126T003055Z-139901"
