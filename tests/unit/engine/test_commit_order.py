"""An overwrite's commit first: the others wait for it, and never commit when it failed."""

from __future__ import annotations

import threading

import pytest

from headwater.engine._commit_order import FirstCommit, FirstCommitFailed


def test_the_first_checkpoint_never_waits_and_the_others_wait_for_its_commit() -> None:
    first = FirstCommit(7)
    first.wait_turn(7)  # its own turn: at once
    passed = threading.Event()
    waiter = threading.Thread(target=lambda: (first.wait_turn(8), passed.set()))
    waiter.start()
    assert not passed.wait(0.2)  # still waiting: the overwrite has not committed
    first.settle(committed=True)
    waiter.join(30)
    assert passed.is_set()


def test_no_commit_follows_an_overwrite_that_did_not_commit() -> None:
    first = FirstCommit(1)
    first.settle(committed=False)
    first.settle(committed=True)  # the first word counts: a lane that ended early said it
    with pytest.raises(FirstCommitFailed, match="checkpoint 2 was not committed"):
        first.wait_turn(2)
