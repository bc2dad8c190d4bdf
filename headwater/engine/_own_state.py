"""Carry a source's own state from the executors to the driver inside the commit.

Streams that keep their own state (``Stream.keeps_own_state``: Airbyte
connectors) produce, per partition, one extra row whose
:data:`~headwater.engine._task.STATE_COLUMN` holds the partition's last state.
Before the destination sees the rows, those state rows are observed (a Spark
``Observation``) and filtered out, so the destination writes only records and
needs no change.  The observation is filled by the same Spark job that writes
the checkpoint: when the commit returns, the states are exactly those of the
records it committed, and a failed job yields none (no side channel, no race).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from headwater.engine._task import STATE_COLUMN
from headwater.errors import StateError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, Observation


class ObservedStates:
    """The states a checkpoint's commit job saw; read them only after the commit."""

    def __init__(self, observation: Observation) -> None:
        self._observation = observation

    def get(self) -> dict[str, dict[str, Any]]:
        """Partition id -> state (waits for the commit's job, which has finished by then)."""
        states: dict[str, dict[str, Any]] = {}
        for text in self._observation.get["states"] or []:
            try:
                item = json.loads(text)
                states[str(item["partition"])] = dict(item["state"])
            except (ValueError, KeyError, TypeError) as exc:
                raise StateError(f"a partition's own state could not be read back: {exc}"
                                 ) from exc
        return states


def split_partition_states(rows: DataFrame, name: str) -> tuple[DataFrame, ObservedStates]:
    """``rows`` without the state rows and column, and the observation of those states."""
    from pyspark.sql import Observation
    from pyspark.sql import functions as F

    observation = Observation(f"hw_states_{name}_{id(rows)}")
    observed = rows.observe(observation, F.collect_list(F.col(STATE_COLUMN)).alias("states"))
    records = observed.where(F.col(STATE_COLUMN).isNull()).drop(STATE_COLUMN)
    return records, ObservedStates(observation)
