"""Tell the destination which checkpoints of an attempt will not commit (its ``abort``).

Why after every lane has ended, not as the checkpoint fails: another lane of
the same stream may still be writing, and a destination that finds what a
failed checkpoint left by looking (task-written files a table's log names only
once committed) must not mistake a commit in flight for debris.
Why only failures whose outcome is known: a commit that may have landed is
the next attempt's to look up, and its files are then the table's.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from headwater.destinations import Destination
    from headwater.destinations._base import CommitMarker
    from headwater.plan import CheckpointPlan, StreamPlan

log = logging.getLogger(__name__)


def abort_failed(destination: Destination, spark: SparkSession, plan: StreamPlan,
                 failed: Sequence[tuple[CheckpointPlan, CommitMarker]]) -> None:
    """Call ``destination.abort`` for each failed checkpoint; a raise is logged, not fatal
    (what an abort cannot remove costs space, never correctness)."""
    for checkpoint, marker in failed:
        try:
            destination.abort(spark, plan, checkpoint, marker)
        except Exception as exc:
            log.warning("stream %s checkpoint %s: could not drop what the failed checkpoint "
                        "left behind (%s: %s); it takes space, nothing reads it",
                        plan.stream.name, checkpoint.index, type(exc).__name__, exc)
