"""How one checkpoint reaches the destination: one small object per route.

Which route a stream's checkpoints take is decided once per stream, from the
persisted plan and the destination's capabilities, so every attempt of a run
decides alike:

========================  =======================  ==================================
route                     when                     finds an earlier attempt's with
========================  =======================  ==================================
:class:`ReplaceRun`       a replay (not dedup)     ``find_commit``
:class:`StageFiles`       staged overwrite, files  ``find_staged``
:class:`StageRows`        staged overwrite, rows   ``find_staged``
:class:`CommitFiles`      tasks write the files    ``find_commit``
:class:`CommitRows`       everything else          ``find_commit``
========================  =======================  ==================================

A route with files hands the destination the rows describing the files its
tasks wrote (``Destination.file_writer``); the others hand it the rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from headwater.sync_modes import DestinationSyncMode

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from headwater.destinations import Destination
    from headwater.destinations._base import CommitMarker, CommitResult, FileWriter
    from headwater.plan import CheckpointPlan, StreamPlan


@dataclass(frozen=True)
class CommitRows:
    """Commit the checkpoint's rows in one idempotent transaction."""

    destination: Destination
    writer: FileWriter | None = None

    def find(self, spark: SparkSession, plan: StreamPlan,
             marker: CommitMarker) -> CommitResult | None:
        return self.destination.find_commit(spark, plan, marker)

    def commit(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
               rows: DataFrame, marker: CommitMarker) -> CommitResult:
        return self.destination.commit(spark, plan, checkpoint, rows, marker)


@dataclass(frozen=True)
class CommitFiles(CommitRows):
    """Commit the files the checkpoint's tasks wrote (``rows`` describe them)."""

    def commit(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
               rows: DataFrame, marker: CommitMarker) -> CommitResult:
        return self.destination.commit_files(spark, plan, checkpoint, rows, marker)


@dataclass(frozen=True)
class StageRows(CommitRows):
    """Keep an overwrite checkpoint's rows durably, unseen, until the run publishes."""

    def find(self, spark: SparkSession, plan: StreamPlan,
             marker: CommitMarker) -> CommitResult | None:
        return self.destination.find_staged(spark, plan, marker)

    def commit(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
               rows: DataFrame, marker: CommitMarker) -> CommitResult:
        return self.destination.stage(spark, plan, checkpoint, rows, marker)


@dataclass(frozen=True)
class StageFiles(StageRows):
    """:class:`StageRows` for the files the checkpoint's tasks wrote."""

    def commit(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
               rows: DataFrame, marker: CommitMarker) -> CommitResult:
        return self.destination.stage_files(spark, plan, checkpoint, rows, marker)


@dataclass(frozen=True)
class ReplaceRun(CommitRows):
    """Replace every row of the replayed run with the checkpoint's, in one transaction."""

    replaced_run_id: str = ""

    def commit(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
               rows: DataFrame, marker: CommitMarker) -> CommitResult:
        return self.destination.replace_run(spark, plan, checkpoint, rows, marker,
                                            replaced_run_id=self.replaced_run_id)


def choose_route(destination: Destination, plan: StreamPlan, *, staged: bool,
                 writer: FileWriter | None, replay_of: str | None) -> CommitRows:
    """The route of a stream's checkpoints (see the module docstring's table).

    A replay of an ``append_dedup`` stream MERGEs like a sync (the latest cursor
    wins anyway), and so does a ``history`` stream's (it opens no version twice);
    ``writer`` is None unless the destination takes task-written files.
    """
    if replay_of is not None and plan.stream.destination_sync_mode not in (
            DestinationSyncMode.APPEND_DEDUP, DestinationSyncMode.HISTORY):
        return ReplaceRun(destination, replaced_run_id=replay_of)
    if staged:
        return StageFiles(destination, writer) if writer is not None \
            else StageRows(destination)
    return CommitFiles(destination, writer) if writer is not None else CommitRows(destination)


__all__ = ["CommitFiles", "CommitRows", "ReplaceRun", "StageFiles", "StageRows",
           "choose_route"]
