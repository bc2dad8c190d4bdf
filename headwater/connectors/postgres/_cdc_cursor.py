"""Change data capture's state in the postgres source: a WAL position (LSN) or how far the
first snapshot is (:mod:`headwater.connectors._cdc_state` gives the shapes and why).

``{"lsn": "0/16B3748"}``: every transaction whose commit record starts before that
WAL position is in the table; ``{"snapshot": {"lsn": L0, "plan": P, "done": [...]}}``
while the first snapshot (consistent with the slot's point ``L0``) is under way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, TypeGuard

from headwater.connectors._cdc_state import SNAPSHOT, PositionCursor, snapshot_plan

__all__ = ["SNAPSHOT", "LsnCursor", "reads_changes", "snapshot_plan"]

_LSN = re.compile(r"[0-9A-Fa-f]+/[0-9A-Fa-f]+")


class LsnCursor(PositionCursor):
    """The state of a postgres change data capture stream: positions are LSNs ``X/Y``."""

    KEY = "lsn"
    FORM = "X/Y"
    PATTERN = _LSN


def reads_changes(state: Mapping[str, Any] | None) -> TypeGuard[Mapping[str, Any]]:
    """Whether a sync from ``state`` reads changes (else it reads a snapshot first)."""
    return LsnCursor.reads_changes(state)
