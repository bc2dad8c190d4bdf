"""Change data capture's state: where the changes start, or how far the first snapshot is.

Two shapes, both plain JSON:

* ``{"lsn": "0/16B3748"}``: every transaction whose commit record starts before
  that WAL position is in the table; the next sync reads those committed from it on.
* ``{"snapshot": {"lsn": L0, "plan": P, "done": [partition ids]}}``: the first
  snapshot (consistent with the slot's point ``L0``) is under way, and the
  partitions listed are committed.  Why this is state at all: a resumed run
  re-executes only the checkpoints that were not released, so a cursor that only
  counted the partitions closed in its own attempt never saw the snapshot whole
  and never moved to ``{"lsn": L0}`` (the next sync then read the whole table
  again while the slot held its WAL).  ``P`` names the plan's set of key ranges
  (:func:`snapshot_plan`): ids count toward the snapshot only within one plan, so a
  new plan (same ``L0``, other ranges) starts its list afresh.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

from headwater.errors import StateError
from headwater.sdk import Cursor, Partition

__all__ = ["SNAPSHOT", "LsnCursor", "reads_changes", "snapshot_plan"]

#: The state's key while the first snapshot is under way.
SNAPSHOT = "snapshot"

_LSN = re.compile(r"[0-9A-Fa-f]+/[0-9A-Fa-f]+")


def _is_lsn(value: Any) -> bool:
    return isinstance(value, str) and _LSN.fullmatch(value) is not None


def _valid(state: Mapping[str, Any]) -> bool:
    if _is_lsn(state.get("lsn")):
        return True
    snapshot = state.get(SNAPSHOT)
    return (isinstance(snapshot, Mapping) and _is_lsn(snapshot.get("lsn"))
            and isinstance(snapshot.get("done"), list)
            and all(isinstance(i, str) for i in snapshot["done"]))


def reads_changes(state: Mapping[str, Any] | None) -> TypeGuard[Mapping[str, Any]]:
    """Whether a sync from ``state`` reads changes (else it reads a snapshot first)."""
    return state is not None and "lsn" in state


def snapshot_plan(partition_ids: Sequence[str]) -> str:
    """A short name of one snapshot plan's set of partitions (equal sets, equal names)."""
    text = "\n".join(sorted(partition_ids)).encode()
    return hashlib.blake2b(text, digest_size=8).hexdigest()


class LsnCursor(Cursor):
    """The state of a change data capture stream (the module docs give its shapes).

    A snapshot's partitions each carry ``snapshot_lsn``, ``of`` (how many the
    plan has) and ``snapshot_plan``; the state becomes ``{"lsn": snapshot_lsn}``
    once every one of them is committed, whichever attempt committed it.  A
    change partition carries ``changes_upto``: the state becomes that position.
    """

    def __init__(self, state: Mapping[str, Any] | None) -> None:
        if state is not None and not (isinstance(state, Mapping) and _valid(state)):
            raise StateError("change data capture state must be {'lsn': 'X/Y'} or "
                             f"{{'snapshot': {{'lsn': 'X/Y', 'done': [...]}}}}, got {state!r}")
        self._state = dict(state) if state is not None else None
        snapshot = state.get(SNAPSHOT) if state is not None else None
        self._snapshot: dict[str, Any] | None = (
            {"lsn": snapshot["lsn"], "plan": snapshot.get("plan"), "done": set(snapshot["done"])}
            if isinstance(snapshot, Mapping) else None)
        self._of: int | None = None
        self._changes_upto: str | None = None

    def close_partition(self, partition: Partition) -> None:
        params = partition.params
        if "changes_upto" in params:
            self._changes_upto = str(params["changes_upto"])
        elif "snapshot_lsn" in params:
            lsn, plan = str(params["snapshot_lsn"]), params.get("snapshot_plan")
            if self._snapshot is None or (self._snapshot["lsn"], self._snapshot["plan"]) != (
                    lsn, plan):
                self._snapshot = {"lsn": lsn, "plan": plan, "done": set()}
            self._snapshot["done"].add(partition.id)
            self._of = int(params["of"])

    def state(self) -> dict[str, Any] | None:
        if self._changes_upto is not None:
            return {"lsn": self._changes_upto}
        if self._snapshot is None or self._of is None:
            return self._state  # no snapshot partition closed in this attempt
        if len(self._snapshot["done"]) >= self._of:
            return {"lsn": self._snapshot["lsn"]}
        return {SNAPSHOT: {"lsn": self._snapshot["lsn"], "plan": self._snapshot["plan"],
                           "done": sorted(self._snapshot["done"])}}
