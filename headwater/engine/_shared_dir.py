"""The folder a run's tasks share (``PlanContext.shared_dir``), and its lifetime.

Only a session whose tasks all run on this machine gets one (a ``local``
master): a folder on the driver's disk means nothing to an executor elsewhere.
It is made when the run is planned, kept while the run can still resume, and
removed when the run ends for good.  A source that reads through it names it in
its partitions' parameters (under a key of its own); a plan none of whose
partitions does keeps no folder, and a replay, which re-reads a past run's
partitions, reads them without the folder that run had.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from typing import TYPE_CHECKING

from headwater.plan import RunPlan, StreamPlan
from headwater.sdk import Partition

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["discard_unused", "make_shared_dir", "new_shared_dir", "remove_shared_dir",
           "tasks_run_here", "without_shared_dir"]


def tasks_run_here(spark: SparkSession) -> bool:
    """Whether every task of ``spark`` runs on this machine (a ``local`` master)."""
    try:
        master = str(spark.sparkContext.master)
    except Exception:  # Spark Connect: the tasks run wherever its server runs them
        return False
    return master.startswith("local")


def make_shared_dir() -> str:
    """A new private folder (mode 0700) in the temporary directory."""
    return tempfile.mkdtemp(prefix="headwater-run-")


def new_shared_dir(spark: SparkSession) -> str | None:
    """A new private folder when every task runs on this machine, else None."""
    return make_shared_dir() if tasks_run_here(spark) else None


def discard_unused(folder: str | None, plans: Sequence[StreamPlan]) -> str | None:
    """``folder`` if a partition of ``plans`` reads through it; else it is removed."""
    if folder is None:
        return None
    if any(folder in p.params.values()
           for plan in plans for checkpoint in plan.checkpoints for p in checkpoint.partitions):
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    return None


def remove_shared_dir(plan: RunPlan) -> None:
    """Remove the run's folder (the run has ended and will not resume)."""
    if plan.shared_dir:
        shutil.rmtree(plan.shared_dir, ignore_errors=True)


def without_shared_dir(partitions: Sequence[Partition], folder: str | None) -> list[Partition]:
    """``partitions`` with no parameter naming ``folder`` (a past run's shared folder)."""
    if folder is None:
        return list(partitions)
    return [Partition(p.stream, p.id, {k: v for k, v in p.params.items() if v != folder})
            if folder in p.params.values() else p for p in partitions]
