"""The quarantine table: the rows a stream's ``quarantine`` expectations kept out of its
table, beside it (``<table>_quarantine``), with the names of the expectations each
failed (``_hw_failed_expectations``) and the run that read it (``_hw_run_id``).

Exactly once, like the stream's table: a checkpoint's quarantined rows replace,
in one Delta commit, whatever the table holds of the same run and the same
partitions (``replaceWhere``), and the commit carries the checkpoint's
``txnAppId``/``txnVersion`` (its lane's, with ``-quarantine``).  An attempt that
re-reads a checkpoint whose quarantine commit landed is skipped by Delta; a replay
of a run (whose rows keep the replayed run's id) replaces that run's quarantined
rows of those partitions instead of adding them again.  The quarantine commit
comes before the checkpoint's own: a crash between them leaves the checkpoint
uncommitted and the run unfinished, so the next attempt reads it again and Delta
skips its quarantine commit; a checkpoint that fails instead (its run is not
resumed, the next run reads its windows again) has its quarantined rows deleted
as the stream's lanes end (:func:`remove_quarantined`).

Why Delta only: the write is Spark's Delta writer on a path beside the stream's
table.  Iceberg's, PostgreSQL's and the files destination's commits go through
their own machinery (PyIceberg, COPY, manifests), so there ``quarantine`` is a
config error (:func:`quarantine_refusal`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from headwater.destinations import Destination
    from headwater.destinations._base import CommitMarker

#: Destinations whose streams may quarantine rows (by ``type_name``).
QUARANTINE_DESTINATIONS = ("delta",)
#: What the quarantine table's name adds to the stream's table's.
SUFFIX = "_quarantine"


def quarantine_refusal(destination_type: str) -> str | None:
    """Why ``quarantine`` cannot be an expectation's action on this destination."""
    if destination_type in QUARANTINE_DESTINATIONS:
        return None
    return (f"the {destination_type} destination has no quarantine table (only "
            f"{', '.join(QUARANTINE_DESTINATIONS)} has): use action drop, warn or fail")


def quarantine_location(destination: Destination, stream: str) -> str:
    """Where the stream's quarantine table lives: beside its table."""
    return destination.table_location(stream).rstrip("/") + SUFFIX


def _rows_of(run_id: str, partitions: Sequence[str]) -> str:
    """The predicate of the quarantined rows ``run_id`` read from ``partitions``."""
    return (f"_hw_run_id = {_literal(run_id)} AND _hw_partition_id IN "
            f"({', '.join(_literal(p) for p in partitions)})")


def write_quarantine(rows: DataFrame, location: str, marker: CommitMarker, run_id: str,
                     partitions: Sequence[str]) -> None:
    """Replace the quarantined rows of ``run_id``'s ``partitions`` with ``rows``, once."""
    writer = (rows.write.format("delta").mode("overwrite")
              .option("replaceWhere", _rows_of(run_id, partitions))
              .option("mergeSchema", "true")
              .option("txnAppId", marker.app_id + SUFFIX)
              .option("txnVersion", marker.version)
              .option("userMetadata", marker.tag))
    # One at a time per table: two lanes' replaceWhere commits (or two creations of
    # the table) would conflict; quarantined rows are few, so the wait is short.
    with _lock_of(location):
        writer.save(location)


def remove_quarantined(spark: SparkSession, location: str, run_id: str,
                       partitions: Sequence[str]) -> None:
    """Delete what a checkpoint that failed before its commit quarantined.

    A failed run is not resumed: the next run reads the checkpoint's windows again
    under its own id, and would quarantine their rows a second time.  Best effort,
    as a destination's ``abort``: the caller logs what this raises.
    """
    from delta.tables import DeltaTable

    if partitions and DeltaTable.isDeltaTable(spark, location):
        with _lock_of(location):
            DeltaTable.forPath(spark, location).delete(_rows_of(run_id, partitions))


_locks: dict[str, threading.Lock] = {}
_locks_lock = threading.Lock()


def _lock_of(location: str) -> threading.Lock:
    with _locks_lock:
        return _locks.setdefault(location, threading.Lock())


def _literal(text: str) -> str:
    """``text`` as a Spark SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


__all__ = ["QUARANTINE_DESTINATIONS", "SUFFIX", "quarantine_location", "quarantine_refusal",
           "remove_quarantined", "write_quarantine"]
