"""Change data capture's state, for any source with a server-side position: where the
changes start, or how far the first snapshot is.

Two shapes, both plain JSON (``KEY`` is the source's name for its position: the
postgres source's ``lsn``, the mysql source's ``binlog``):

* ``{KEY: position}``: every transaction that starts before that position is in
  the table; the next sync reads those from it on.
* ``{"snapshot": {KEY: P0, "plan": P, "done": [partition ids]}}``: the first
  snapshot (whose changes start at ``P0``) is under way, and the partitions listed
  are committed.  Why this is state at all: a resumed run re-executes only the
  checkpoints that were not released, so a cursor that only counted the partitions
  closed in its own attempt never saw the snapshot whole and never moved to
  ``{KEY: P0}`` (the next sync then read the whole table again).  ``P`` names the
  plan's set of key ranges (:func:`snapshot_plan`): ids count toward the snapshot
  only within one plan, so a new plan (same ``P0``, other ranges) starts its list
  afresh.

Partitions say what they are by their params: a snapshot's carry ``snapshot_<KEY>``,
``of`` (how many the plan has) and ``snapshot_plan``; a change partition carries
``changes_upto``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from headwater.errors import StateError
from headwater.sdk import Cursor, Partition

__all__ = ["SNAPSHOT", "PositionCursor", "snapshot_plan"]

#: The state's key while the first snapshot is under way.
SNAPSHOT = "snapshot"


def snapshot_plan(partition_ids: Sequence[str]) -> str:
    """A short name of one snapshot plan's set of partitions (equal sets, equal names)."""
    text = "\n".join(sorted(partition_ids)).encode()
    return hashlib.blake2b(text, digest_size=8).hexdigest()


class PositionCursor(Cursor):
    """The state of a change data capture stream (the module docs give its shapes).

    A subclass names its position's key (:attr:`KEY`), its written form
    (:attr:`FORM`, for messages) and the text of a position (:attr:`PATTERN`,
    matched whole).
    """

    KEY: ClassVar[str]
    FORM: ClassVar[str]
    PATTERN: ClassVar[re.Pattern[str]]

    @classmethod
    def is_position(cls, value: Any) -> bool:
        return isinstance(value, str) and cls.PATTERN.fullmatch(value) is not None

    @classmethod
    def valid(cls, state: Mapping[str, Any]) -> bool:
        if cls.is_position(state.get(cls.KEY)):
            return True
        snapshot = state.get(SNAPSHOT)
        return (isinstance(snapshot, Mapping) and cls.is_position(snapshot.get(cls.KEY))
                and isinstance(snapshot.get("done"), list)
                and all(isinstance(i, str) for i in snapshot["done"]))

    @classmethod
    def reads_changes(cls, state: Mapping[str, Any] | None) -> bool:
        """Whether a sync from ``state`` reads changes (else it reads a snapshot first)."""
        return state is not None and cls.KEY in state

    @classmethod
    def snapshot_param(cls) -> str:
        """The param naming a snapshot partition's position (``snapshot_<KEY>``)."""
        return f"snapshot_{cls.KEY}"

    def __init__(self, state: Mapping[str, Any] | None) -> None:
        key = self.KEY
        if state is not None and not (isinstance(state, Mapping) and self.valid(state)):
            raise StateError(f"change data capture state must be {{'{key}': '{self.FORM}'}} or "
                             f"{{'snapshot': {{'{key}': '{self.FORM}', 'done': [...]}}}}, "
                             f"got {state!r}")
        self._state = dict(state) if state is not None else None
        snapshot = state.get(SNAPSHOT) if state is not None else None
        self._snapshot: dict[str, Any] | None = (
            {key: snapshot[key], "plan": snapshot.get("plan"), "done": set(snapshot["done"])}
            if isinstance(snapshot, Mapping) else None)
        self._of: int | None = None
        self._changes_upto: str | None = None

    def close_partition(self, partition: Partition) -> None:
        params, key = partition.params, self.KEY
        if "changes_upto" in params:
            self._changes_upto = str(params["changes_upto"])
        elif self.snapshot_param() in params:
            position, plan = str(params[self.snapshot_param()]), params.get("snapshot_plan")
            if self._snapshot is None or (self._snapshot[key], self._snapshot["plan"]) != (
                    position, plan):
                self._snapshot = {key: position, "plan": plan, "done": set()}
            self._snapshot["done"].add(partition.id)
            self._of = int(params["of"])

    def state(self) -> dict[str, Any] | None:
        key = self.KEY
        if self._changes_upto is not None:
            return {key: self._changes_upto}
        if self._snapshot is None or self._of is None:
            return self._state  # no snapshot partition closed in this attempt
        if len(self._snapshot["done"]) >= self._of:
            return {key: self._snapshot[key]}
        return {SNAPSHOT: {key: self._snapshot[key], "plan": self._snapshot["plan"],
                           "done": sorted(self._snapshot["done"])}}
