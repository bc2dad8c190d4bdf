"""The checkpoint manager: release state in index order, whatever order commits finish in.

A checkpoint is one batch of partitions committed to the destination in one
transaction.  It has two names, because what it holds and when its state may
move are different questions:

* ``checkpoint_id`` says *which records* (it is written next to them), and
* ``index`` says *in which order* its state may be released.  Indices of one
  stream only grow across runs, so a resumed run does not start at 0.

Checkpoints are committed by several threads and finish in any order, but the
state store must only ever hold state whose every earlier checkpoint is
durable.  So the state of index N is released only after every lower expected
index is released and N itself is committed; a failed checkpoint holds back
every later one for good (their data is committed, but their state never
claims it, so the next run reads it again and the destination's idempotent
writes keep it exactly once).

Example::

    manager = CheckpointManager([CheckpointKey(10, "a"), CheckpointKey(11, "b")])
    manager.mark_committed("b", state_b)
    manager.release_ready()          # [] : 10 is not committed yet
    manager.mark_committed("a", state_a)
    manager.release_ready()          # [(CheckpointKey(10, "a"), state_a),
                                     #  (CheckpointKey(11, "b"), state_b)]
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["CheckpointKey", "CheckpointManager"]

T = TypeVar("T")


@dataclass(frozen=True, order=True)
class CheckpointKey:
    """Identity and release position of one checkpoint; keys sort by ``index``."""

    index: int
    checkpoint_id: str


class CheckpointManager(Generic[T]):
    """Holds committed checkpoints' payloads (their state) until they may be released.

    ``expected`` is the plan's checkpoints still to be released, in any order;
    a duplicate ``index`` or ``checkpoint_id`` is a planning bug and raises
    ``ValueError``.  Only expected indices count as "lower": gaps in the
    numbering (10, 12, 15) do not block anything.
    """

    def __init__(self, expected: Iterable[CheckpointKey]) -> None:
        keys = sorted(expected)
        by_id: dict[str, CheckpointKey] = {}
        seen_indices: set[int] = set()
        for key in keys:
            if key.checkpoint_id in by_id:
                raise ValueError(f"checkpoint id {key.checkpoint_id!r} is expected twice")
            if key.index in seen_indices:
                raise ValueError(f"checkpoint index {key.index} is expected twice")
            by_id[key.checkpoint_id] = key
            seen_indices.add(key.index)
        self._order = keys
        self._by_id = by_id
        # Commit threads call mark_committed/mark_failed while the driver calls
        # release_ready; the lock makes "is every lower index released?" and the
        # release itself one step, so a checkpoint is never released twice nor
        # ahead of a lower one.
        self._lock = threading.Lock()
        self._committed: dict[str, T] = {}
        self._failed: set[str] = set()
        self._next = 0  # position in _order of the first checkpoint not yet released

    def mark_committed(self, checkpoint_id: str, payload: T) -> None:
        """Record that every record of ``checkpoint_id`` is durable in the destination."""
        with self._lock:
            key = self._known(checkpoint_id)
            if checkpoint_id in self._committed or self._is_released(key):
                raise ValueError(f"checkpoint {checkpoint_id!r} is already committed")
            if checkpoint_id in self._failed:
                raise ValueError(f"checkpoint {checkpoint_id!r} already failed")
            self._committed[checkpoint_id] = payload

    def mark_failed(self, checkpoint_id: str) -> None:
        """Record that ``checkpoint_id`` will not commit in this run; later ones never release."""
        with self._lock:
            key = self._known(checkpoint_id)
            if self._is_released(key):
                raise ValueError(f"checkpoint {checkpoint_id!r} is already released")
            self._failed.add(checkpoint_id)
            self._committed.pop(checkpoint_id, None)

    def release_ready(self) -> list[tuple[CheckpointKey, T]]:
        """Committed checkpoints whose every lower expected index is released, in index order.

        Each checkpoint is returned exactly once; its payload is dropped here.
        """
        ready: list[tuple[CheckpointKey, T]] = []
        with self._lock:
            while self._next < len(self._order):
                key = self._order[self._next]
                if key.checkpoint_id not in self._committed:
                    break  # not committed yet, or failed: everything after waits
                ready.append((key, self._committed.pop(key.checkpoint_id)))
                self._next += 1
        return ready

    @property
    def released(self) -> list[CheckpointKey]:
        """Released checkpoints, in index order."""
        with self._lock:
            return self._order[: self._next]

    @property
    def pending(self) -> list[CheckpointKey]:
        """Expected checkpoints not yet released (committed or not), in index order."""
        with self._lock:
            return self._order[self._next :]

    @property
    def blocked_by(self) -> CheckpointKey | None:
        """The lowest failed checkpoint, which holds back every later one; else ``None``."""
        with self._lock:
            failed = [self._by_id[checkpoint_id] for checkpoint_id in self._failed]
        return min(failed, default=None)

    @property
    def waiting_for(self) -> CheckpointKey | None:
        """The lowest unreleased checkpoint that is neither committed nor failed."""
        with self._lock:
            for key in self._order[self._next :]:
                if key.checkpoint_id not in self._committed:
                    return None if key.checkpoint_id in self._failed else key
        return None

    def _known(self, checkpoint_id: str) -> CheckpointKey:
        try:
            return self._by_id[checkpoint_id]
        except KeyError:
            raise ValueError(f"checkpoint {checkpoint_id!r} is not in the plan") from None

    def _is_released(self, key: CheckpointKey) -> bool:
        # Released checkpoints are exactly the first ``_next`` of the sorted plan.
        return self._next > 0 and key.index <= self._order[self._next - 1].index
