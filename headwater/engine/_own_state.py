"""Carry a source's own state from the executors into the commit that releases it.

Streams that keep their own state (``Stream.keeps_own_state``: Airbyte
connectors) finish each partition with a state only they know.  Where a run
moves state (incremental syncs), those states must be durable *before* the
checkpoint commits: a sync killed between the destination's commit and the
metadata store's release is resumed by an attempt that finds the commit, and
must find the states to release with it.  Two ways, by kind of session:

* **Classic Spark** (the default): each task adds its partitions' states to
  the checkpoint's stats accumulator.  Spark acknowledges a task's accumulator
  update only after the driver's handler ran, and finishes the job (then
  commits) only after every task is acknowledged; the handler writes the states
  to the metadata store (``partition_states``), so they are there before the
  commit.  No second pass over the rows (see :mod:`._partition_stats`).
* **Spark Connect** (no accumulators): one extra row per partition carries the
  state (:data:`~headwater.engine._task.STATE_COLUMN`).  The checkpoint's rows
  are staged once (``localCheckpoint``, as a MERGE already does): a connector's
  read cannot be repeated, and the staged rows give both the states (a tiny
  collect, written into the commit's own tag, see
  :class:`~headwater.destinations.CommitMarker`) and the records the destination
  writes.  This module does that staging.

Either way a read that fails fails the job, and no state moves.  Full refresh
syncs, replays and backfills move no state, so they carry none.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from headwater.engine._task import STATE_COLUMN
from headwater.errors import StateError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def split_state_rows(rows: DataFrame) -> tuple[DataFrame, dict[str, dict[str, Any]]]:
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
