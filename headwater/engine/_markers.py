"""A checkpoint's commit marker: how a sync keys its commits, and how a command outside
the sync (``headwater state realign``) asks a table whether one landed.

Both build the marker here, so realign asks exactly what a resumed attempt asks
(``StreamRunner._found_commit``, the destination's ``find_commit``): a marker built
another way would look for a commit no sync ever made, and call a landed one absent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from headwater.destinations._base import CommitMarker
from headwater.errors import StoreBehindTableError
from headwater.plan import RunPlan

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from headwater.destinations import Destination
    from headwater.metadata_store import RunRecord
    from headwater.plan import CheckpointPlan


def lane_app_id_prefix(store_id: str, connection: str, stream: str) -> str:
    """The commit markers' ``app_id`` of a stream's lanes, without the lane number."""
    return f"headwater/{store_id}/{connection}/{stream}/"


def checkpoint_marker(store_id: str, connection: str, stream: str, run_id: str,
                      checkpoint: CheckpointPlan, *, attempt: int) -> CommitMarker:
    """The marker of ``checkpoint``'s commit to ``stream``'s table: its lane's app id, its
    index as the version."""
    return CommitMarker(app_id=lane_app_id_prefix(store_id, connection, stream)
                        + str(checkpoint.lane),
                        version=checkpoint.index, run_id=run_id, stream=stream,
                        checkpoint_index=checkpoint.index, attempt=attempt)


class NotInPlan(LookupError):
    """The run's persisted plan has no such checkpoint of the stream: no marker to ask for."""


def data_commit_landed(spark: SparkSession, destination: Destination, store_id: str,
                       run: RunRecord, stream: str, index: int) -> bool:
    """Whether ``stream``'s table holds the commit of checkpoint ``index`` of ``run``.

    Asked as a resumed attempt asks (``attempt`` past the first: a lane version its own
    run holds, whose commit the log no longer lists, is that run's commit), of the table
    and not of a staging area: a staged checkpoint of a run that never published put
    nothing in the table.  The store behind the table (the lane's version is another
    run's commit, and this checkpoint's is not in the history) is "not there", as the
    engine takes it after a commit that raised (``StreamRunner._landed_despite``).
    Anything else the lookup raises is raised: no answer, which the caller reports
    rather than guesses; :class:`NotInPlan` when the run's plan has no such checkpoint.
    """
    streams = RunPlan.from_dict(run.plan).streams if run.plan else ()
    stream_plan = next((s for s in streams if s.stream.name == stream), None)
    checkpoint = None if stream_plan is None else next(
        (c for c in stream_plan.checkpoints if c.index == index), None)
    if stream_plan is None or checkpoint is None:
        raise NotInPlan(f"run {run.run_id}'s plan has no checkpoint {index} of stream "
                        f"{stream!r}")
    marker = checkpoint_marker(store_id, run.connection, stream, run.run_id, checkpoint,
                               attempt=2)
    try:
        return destination.find_commit(spark, stream_plan, marker) is not None
    except StoreBehindTableError:
        return False


__all__ = ["NotInPlan", "checkpoint_marker", "data_commit_landed", "lane_app_id_prefix"]
