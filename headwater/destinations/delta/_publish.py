"""Publishing a staged overwrite: one commit in mode overwrite of every staged checkpoint.

The checkpoints of an ``overwrite`` run wait out of readers' sight (``_staging.py``):
as manifests of files the tasks wrote, published in one delta-rs commit
(:func:`publish_files`), or in a staging Delta table Spark's writer filled, written
over the table in one Spark commit (:func:`publish_staging_table`).  Either way a
checkpoint that is not staged, or a staged file a ``VACUUM`` removed, refuses the
publish and leaves the table as it was, and a publish the table already holds is
found by its tag (``_commit_lookup.py``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from headwater.destinations._base import CommitResult, PublishMarker
from headwater.destinations._table_files._store import TableFolder
from headwater.destinations.delta import _commit_lookup, _delta_rs, _staging
from headwater.destinations.delta._errors import _failed
from headwater.destinations.delta._reach import _driver_folder
from headwater.destinations.delta._sql import is_delta_table
from headwater.errors import DestinationError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def publish_files(spark: SparkSession, folder: TableFolder, location: str,
                   marker: PublishMarker) -> CommitResult:
    """Add the files every staged manifest lists in one delta-rs commit that replaces
    the table's rows; refused while a checkpoint is not staged or a file is gone."""
    manifests = [_staging.read_manifest(folder, marker.run_id, index)
                 for index in marker.checkpoints]
    missing = [i for i, m in zip(marker.checkpoints, manifests, strict=True) if m is None]
    if missing:
        raise DestinationError(
            f"cannot publish run {marker.run_id} to {location}: checkpoints "
            f"{', '.join(map(str, missing))} are not staged; the table is left as it was",
            stream=marker.stream)
    staged = [m for m in manifests if m is not None]
    gone = _staging.missing_files(folder, staged)
    if gone:
        raise DestinationError(
            f"cannot publish run {marker.run_id} to {location}: {len(gone)} staged files "
            f"were removed (a VACUUM?), e.g. {gone[0]}; the table is left as it was",
            stream=marker.stream)
    files = [f for m in staged for f in m.files]
    rows = sum(m.rows for m in staged)
    rejected = sum(m.rejected for m in staged)
    size = sum(m.size for m in staged)
    try:
        committed = _delta_rs.commit_files(folder, files, mode="overwrite",
                                           app_id=marker.app_id, version=marker.version,
                                           tag=marker.tag_with_counts(rows, rejected, size))
    except Exception as exc:
        if _commit_lookup._publish_after_error(spark, location, marker, exc) is None:
            raise _failed(f"publishing run {marker.run_id} to {location} failed", exc,
                          marker.stream) from exc
        committed = _delta_rs.Committed(made=False)
    version = committed.version
    if not committed.made:
        version = earlier_publish(spark, location, marker)
    return CommitResult(rows=rows, rejected=rejected, bytes=size, version=version,
                        already_committed=not committed.made)


def publish_staging_table(spark: SparkSession, location: str, marker: PublishMarker,
                          options: Mapping[str, str]) -> CommitResult:
    """Write the run's staging table over the table in one Spark commit (``options``:
    the write's, e.g. ``replaceWhere`` for a clustered table); refused while a
    checkpoint is not staged."""
    staging = _staging.staging_location(location, marker.run_id)
    staged = (_commit_lookup._staged_indices(spark, staging, marker)
              if staging_table_exists(spark, staging) else set())
    missing = [i for i in marker.checkpoints if i not in staged]
    if missing:
        raise DestinationError(
            f"cannot publish run {marker.run_id} to {location}: checkpoints "
            f"{', '.join(map(str, missing))} are not staged; the table is left as it was",
            stream=marker.stream)
    try:
        # No observed counts: Delta skips the write of a txn it holds, and an
        # observation of a job that never ran would wait for ever.
        writer = (spark.read.format("delta").load(staging).write.format("delta")
                  .mode("overwrite").option("txnAppId", marker.app_id)
                  .option("txnVersion", marker.version).option("userMetadata", marker.tag))
        for key, value in options.items():
            writer = writer.option(key, value)
        writer.save(location)
    except Exception as exc:
        if _commit_lookup._publish_after_error(spark, location, marker, exc) is None:
            raise _failed(f"publishing run {marker.run_id} to {location} failed", exc,
                          marker.stream) from exc
    found = _commit_lookup._published_commit(spark, location, marker, within_latest=50) \
        or _commit_lookup._published_commit(spark, location, marker)
    if found is None:
        earlier_publish(spark, location, marker)  # raises: the store is behind
        raise AssertionError("unreachable")
    version, metrics, _ = found
    return CommitResult(rows=int(metrics.get("numOutputRows") or 0), rejected=0,
                        bytes=_commit_lookup._bytes_written(metrics), version=version)


def earlier_publish(spark: SparkSession, location: str,
                     marker: PublishMarker) -> int:
    """The version of the publish an earlier attempt made; raise when there is none."""
    found = _commit_lookup._published_commit(spark, location, marker)
    if found is None:
        raise DestinationError(
            f"the table at {location} already holds transaction version {marker.version} "
            f"(or a later one) of {marker.app_id}, but no publish of run {marker.run_id}: "
            "the metadata store is behind the table (restored from an older copy?); the "
            "table is left as it was", stream=marker.stream)
    return found[0]


def staging_table_exists(spark: SparkSession, staging: str) -> bool:
    """Whether the staging table at ``staging`` exists yet.

    Not ``is_delta_table`` alone: Delta resolves a path inside a table's folder
    to that table, and a staging table not created yet is such a path (Delta
    then calls its last part an invalid partition path).
    """
    from pyspark.errors import AnalysisException

    folder = _driver_folder(spark, staging)
    if folder is not None:
        return folder.has_folder("_delta_log")
    try:
        return is_delta_table(spark, staging)
    except AnalysisException as exc:
        if exc.getCondition() == "DELTA_INVALID_PARTITION_PATH":
            return False
        raise
