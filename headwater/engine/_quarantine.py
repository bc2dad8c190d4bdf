"""A stream's quarantine table, committed by the destination as one more stream.

The quarantine table (``<stream>_quarantine``: the stream's columns and
``_hw_failed_expectations``, :mod:`headwater.expectations._quarantine`) is an
``append`` table the destination prepares, writes and commits with the machinery it
uses for any stream: its ``file_writer`` runs in the tasks that read and type the
checkpoint (they write both tables' files, or COPY both tables' rows:
:mod:`headwater.expectations._split`), and the route :func:`choose_route` picks for an
append table commits them, keyed by a marker of its own.  No destination has code
for quarantine; the engine only calls it twice per checkpoint.

Exactly once, like the stream's table:

* **Order.**  A checkpoint's quarantine commit comes before its own, both after the
  one Spark job that wrote both tables' files succeeded (a task that fails, a
  ``fail`` expectation included, commits neither).
* **Keyed by the checkpoint.**  The quarantine commit carries the checkpoint's marker
  with ``_quarantine`` added to its app id (:meth:`QuarantineTable.marker`; same
  version, the lane's growing checkpoint index), which each destination keeps with the
  commit as it keeps any stream's (an idempotent-write pair, snapshot summary markers,
  a row in a markers table in the same transaction).  So a sync killed between the two
  commits is resumed, reads the checkpoint again (its own commit did not land), and the
  destination skips the quarantine commit it already holds; a checkpoint whose own
  commit landed is not read again at all.
* **A failed checkpoint leaves nothing.**  A checkpoint that failed after its
  quarantine commit (its own commit refused) belongs to a run that is not resumed;
  the next run reads its windows again under its own id.  So, as the stream's lanes
  end, the quarantine table's rows of those checkpoints (this run's id, their
  ``_hw_checkpoint``) are deleted (:meth:`Destination.delete_checkpoints`) and the
  files their tasks wrote are dropped (``abort``), best effort, as any abort; what a
  failed delete leaves, ``headwater state realign`` deletes (``_realign_quarantine``).
  A checkpoint whose own commit raised is looked up by its marker first
  (``StreamRunner._landed_despite``): one that landed is committed, not failed, and
  keeps its quarantined rows.
* **A replay** replaces the replayed run's quarantined rows (``replace_run``, the
  route of a replay), even when it quarantines none.

What this does not give: one atomic commit of both tables.  A reader of both may
see a checkpoint's quarantined rows a moment before its kept rows (or, while a
failed checkpoint's are being deleted, rows whose kept rows never land).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import pyarrow as pa

from headwater.engine._abort import abort_failed
from headwater.engine._commit_routes import CommitRows, choose_route
from headwater.expectations._quarantine import SUFFIX, quarantine_columns, quarantine_plan
from headwater.expectations._split import SplitWriter
from headwater.table_schema import META_FIELDS

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from headwater.destinations import Destination
    from headwater.destinations._base import CommitMarker, CommitResult, FileWriter
    from headwater.plan import CheckpointPlan, StreamPlan

log = logging.getLogger("headwater.engine._sync")


@dataclass(frozen=True)
class QuarantineTable:
    """One stream's quarantine table during one attempt of a run."""

    destination: Destination
    #: The quarantine table's own plan: the stream's checkpoints, an append table.
    plan: StreamPlan
    route: CommitRows
    #: Its rows: the metadata columns, then its data columns in the table's types.
    rows_schema: pa.Schema

    @classmethod
    def prepare(cls, spark: SparkSession, destination: Destination, plan: StreamPlan,
                data_schema: pa.Schema, *, run_id: str,
                replay_of: str | None) -> QuarantineTable:
        """Create or evolve the quarantine table of ``plan``'s stream (whose rows have
        ``data_schema``), and choose its route as a stream's would be chosen."""
        own = quarantine_plan(plan)
        prepared = destination.prepare(spark, own, quarantine_columns(data_schema))
        writer = (destination.file_writer(spark, own, run_id=run_id)
                  if replay_of is None and destination.capabilities.task_written_files
                  else None)
        return cls(destination, own,
                   choose_route(destination, own, staged=False, writer=writer,
                                replay_of=replay_of),
                   pa.schema([*META_FIELDS, *prepared]))

    @property
    def writer(self) -> FileWriter | None:
        return self.route.writer

    def split_writer(self, kept: FileWriter | None) -> SplitWriter | None:
        """The writer of a task writing both tables, or None when one of them has none."""
        if kept is None or self.writer is None:
            return None
        return SplitWriter(kept, self.writer, self.rows_schema)

    def marker(self, marker: CommitMarker) -> CommitMarker:
        """The checkpoint's marker, as its quarantine commit carries it."""
        return replace(marker, app_id=marker.app_id + SUFFIX, stream=self.plan.stream.name,
                       partition_states=None)

    def before_job(self, spark: SparkSession, checkpoint: CheckpointPlan,
                   marker: CommitMarker) -> bool:
        """Before a job whose tasks write this table's rows and the stream's (one job for
        two commits): make ready what those tasks write into.  True when the
        quarantine commit must follow even with no row (it removes what was made ready)."""
        return self.destination.before_task_files(spark, self.plan, checkpoint,
                                                  self.marker(marker))

    def commit(self, spark: SparkSession, checkpoint: CheckpointPlan, rows: DataFrame,
               marker: CommitMarker) -> CommitResult:
        """Commit the checkpoint's quarantined rows (or the files holding them) once."""
        return self.route.commit(spark, self.plan, checkpoint, rows, self.marker(marker))

    def remove(self, spark: SparkSession, failed: Sequence[tuple[CheckpointPlan, CommitMarker]],
               rows_run_id: str) -> None:
        """Drop what the failed checkpoints quarantined (see the module docstring)."""
        if not failed:
            return
        abort_failed(self.destination, spark, self.plan,
                     [(checkpoint, self.marker(marker)) for checkpoint, marker in failed])
        try:
            self.destination.delete_checkpoints(spark, self.plan.stream.name, rows_run_id,
                                                [checkpoint.index for checkpoint, _ in failed])
        except Exception as exc:
            log.warning("stream %s: the quarantined rows of failed checkpoints %s could not "
                        "be removed (%s: %s); the next run may quarantine them again "
                        "(`headwater state realign` deletes them where the destination can)",
                        self.plan.stream.name, [c.index for c, _ in failed],
                        type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")


__all__ = ["QuarantineTable"]
