"""Checkpoint manager: release in index order whatever order commits arrive in."""

from __future__ import annotations

import random
import sys
import threading
from collections.abc import Iterator

import pytest

from headwater.engine.checkpoint import CheckpointKey, CheckpointManager


def keys(*indices: int) -> list[CheckpointKey]:
    return [CheckpointKey(i, f"p{i}") for i in indices]


def released_indices(manager: CheckpointManager[str]) -> list[int]:
    return [key.index for key, _ in manager.release_ready()]


def test_release_waits_for_every_lower_index() -> None:
    manager: CheckpointManager[str] = CheckpointManager(keys(3, 1, 0, 2))
    manager.mark_committed("p3", "s3")
    manager.mark_committed("p1", "s1")
    assert manager.release_ready() == []
    assert manager.waiting_for == CheckpointKey(0, "p0")

    manager.mark_committed("p0", "s0")
    assert manager.release_ready() == [
        (CheckpointKey(0, "p0"), "s0"),
        (CheckpointKey(1, "p1"), "s1"),
    ]
    assert manager.release_ready() == []  # each is returned once
    assert manager.released == keys(0, 1)
    assert manager.pending == keys(2, 3)  # 3 is committed but waits for 2

    manager.mark_committed("p2", "s2")
    assert released_indices(manager) == [2, 3]
    assert manager.pending == []
    assert manager.waiting_for is None


def test_indices_need_not_start_at_zero_nor_be_contiguous() -> None:
    manager: CheckpointManager[str] = CheckpointManager(keys(42, 40, 45))
    manager.mark_committed("p42", "b")
    assert released_indices(manager) == []
    manager.mark_committed("p40", "a")
    assert released_indices(manager) == [40, 42]
    manager.mark_committed("p45", "c")
    assert released_indices(manager) == [45]


def test_failed_checkpoint_blocks_all_later_ones_forever() -> None:
    manager: CheckpointManager[str] = CheckpointManager(keys(0, 1, 2, 3))
    manager.mark_committed("p0", "s0")
    manager.mark_committed("p2", "s2")
    manager.mark_failed("p1")
    manager.mark_committed("p3", "s3")
    assert released_indices(manager) == [0]
    assert manager.blocked_by == CheckpointKey(1, "p1")
    assert released_indices(manager) == []
    assert manager.pending == keys(1, 2, 3)
    with pytest.raises(ValueError, match="failed"):
        manager.mark_committed("p1", "late")
    assert released_indices(manager) == []


def test_failing_a_committed_but_unreleased_checkpoint_withholds_it() -> None:
    manager: CheckpointManager[str] = CheckpointManager(keys(0, 1))
    manager.mark_committed("p1", "s1")
    manager.mark_failed("p1")
    manager.mark_committed("p0", "s0")
    assert released_indices(manager) == [0]
    assert manager.blocked_by == CheckpointKey(1, "p1")


def test_misuse_raises_value_error() -> None:
    manager: CheckpointManager[str] = CheckpointManager(keys(0, 1))
    with pytest.raises(ValueError, match="not in the plan"):
        manager.mark_committed("nope", "x")
    with pytest.raises(ValueError, match="not in the plan"):
        manager.mark_failed("nope")
    manager.mark_committed("p0", "s0")
    with pytest.raises(ValueError, match="already committed"):
        manager.mark_committed("p0", "again")
    manager.release_ready()
    with pytest.raises(ValueError, match="already committed"):
        manager.mark_committed("p0", "again")
    with pytest.raises(ValueError, match="already released"):
        manager.mark_failed("p0")
    assert manager.blocked_by is None


@pytest.mark.parametrize(
    "expected",
    [
        [CheckpointKey(0, "a"), CheckpointKey(1, "a")],
        [CheckpointKey(0, "a"), CheckpointKey(0, "b")],
        [CheckpointKey(0, "a"), CheckpointKey(0, "a")],
    ],
)
def test_duplicates_in_the_plan_are_rejected(expected: list[CheckpointKey]) -> None:
    with pytest.raises(ValueError, match="twice"):
        CheckpointManager(expected)


@pytest.fixture
def fast_switching() -> Iterator[None]:
    """Switch threads every microsecond so a missing lock shows up as a double release."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    yield
    sys.setswitchinterval(before)


@pytest.mark.usefixtures("fast_switching")
def test_concurrent_commits_release_each_checkpoint_once_in_order() -> None:
    count = 300
    plan = keys(*range(100, 100 + count))
    manager: CheckpointManager[int] = CheckpointManager(reversed(plan))
    order = list(plan)
    random.Random(3).shuffle(order)
    barrier = threading.Barrier(7)
    batches: list[list[tuple[CheckpointKey, int]]] = []
    # Releases race each other on the committing threads, as they would if a
    # commit thread released right after its own commit.
    sink_lock = threading.Lock()

    errors: list[BaseException] = []

    def committer(chunk: list[CheckpointKey]) -> None:
        barrier.wait()
        try:
            for key in chunk:
                manager.mark_committed(key.checkpoint_id, key.index)
                batch = manager.release_ready()
                with sink_lock:
                    batches.append(batch)
        except BaseException as exc:  # reported below: a thread's exception is otherwise lost
            errors.append(exc)

    threads = [threading.Thread(target=committer, args=(order[i::6],)) for i in range(6)]
    for thread in threads:
        thread.start()
    barrier.wait()
    for thread in threads:
        thread.join()
    assert errors == []
    batches.append(manager.release_ready())

    released = [item for batch in batches for item in batch]
    assert sorted(k.index for k, _ in released) == list(range(100, 100 + count))  # once each
    assert all(key.index == payload for key, payload in released)
    for batch in batches:  # every batch is a contiguous, ordered run of the plan
        if batch:
            first = plan.index(batch[0][0])
            assert [k for k, _ in batch] == plan[first : first + len(batch)]
    assert manager.released == plan
    assert manager.pending == []
