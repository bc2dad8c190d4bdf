"""Carry a source's own state from the executors into the commit that releases it.

Streams that keep their own state (``Stream.keeps_own_state``: Airbyte
connectors) produce, per partition, one extra row whose
:data:`~headwater.engine._task.STATE_COLUMN` holds the partition's last state.
Those states must be known *before* the checkpoint commits, so that the commit
itself carries them (in its tag, see :class:`~headwater.destinations.CommitMarker`):
a sync killed between the destination's commit and the metadata store's release
is resumed by an attempt that finds the commit, and with it the states to
release.  Observing them during the commit's own job would hand them to the
driver only after the commit, too late for that.

So the checkpoint's rows are staged once (``localCheckpoint``, as a MERGE
already does): a connector's read cannot be repeated, and the staged rows give
both the states (a tiny collect) and the records the destination writes.
A read that fails fails the staging, and no state moves.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from headwater.engine._task import STATE_COLUMN
from headwater.errors import StateError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def stage_partition_states(rows: DataFrame) -> tuple[DataFrame, dict[str, dict[str, Any]]]:
    """The checkpoint's records (staged, without the state rows and column) and the
    partition id -> state of every partition that finished its read."""
    from pyspark.sql import functions as F

    staged = rows.localCheckpoint(eager=True)
    texts = [row[0] for row in staged.where(F.col(STATE_COLUMN).isNotNull())
             .select(STATE_COLUMN).collect()]
    return staged.where(F.col(STATE_COLUMN).isNull()).drop(STATE_COLUMN), parse_states(texts)


def parse_states(texts: list[str]) -> dict[str, dict[str, Any]]:
    """Partition id -> state from the state rows' JSON (``{"partition", "state"}``)."""
    states: dict[str, dict[str, Any]] = {}
    for text in texts:
        try:
            item = json.loads(text)
            states[str(item["partition"])] = dict(item["state"])
        except (ValueError, KeyError, TypeError) as exc:
            raise StateError(f"a partition's own state could not be read back: {exc}") from exc
    return states
