"""What ``headwater state realign`` reads from a Delta table, and the one change it may make.

The metadata store's checkpoint counters must stay ahead of the ``txnVersion``
each lane's commits carry; after the store went back in time they are not
(``StoreBehindTableError``).  The table is the source of truth then: its log
holds every lane's latest txn version, and its rows name the run that wrote
them (``_hw_run_id``), so runs the store no longer knows can be listed.

Read through Spark, so object-store tables and Spark Connect work as well: the
txn actions are in the commit files still in the log and, for commits a log
clean-up removed, carried forward in the latest checkpoint.  Whether there is a
table at all is asked of its log through delta-rs where the driver reaches the
folder (:func:`_holds_table`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from headwater.destinations.delta import _delta_rs
from headwater.destinations.delta._reach import _driver_folder
from headwater.destinations.delta._sql import is_delta_table, table_ref

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def lane_versions(spark: SparkSession, location: str, app_id_prefix: str) -> dict[str, int]:
    """Each txn app id starting with ``app_id_prefix`` in the table's log, with its latest version.

    Empty when ``location`` holds no Delta table.
    """
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    if not _holds_table(spark, location):
        return {}
    schema = StructType([StructField("txn", StructType([
        StructField("appId", StringType()), StructField("version", LongType())]))])
    log = f"{location.rstrip('/')}/_delta_log"
    frames: list[DataFrame] = [spark.read.schema(schema).json(f"{log}/*.json")]
    try:
        checkpoints = spark.read.schema(schema).parquet(f"{log}/*.checkpoint*.parquet")
        checkpoints.limit(0).collect()  # a missing glob fails here, not in the union
        frames.append(checkpoints)
    except AnalysisException:
        pass  # no checkpoint yet
    txns = frames[0] if len(frames) == 1 else frames[0].unionByName(frames[1])
    rows = (txns.where(F.col("txn.appId").startswith(app_id_prefix))
            .groupBy(F.col("txn.appId").alias("app_id"))
            .agg(F.max("txn.version").alias("version")).collect())
    return {str(row["app_id"]): int(row["version"]) for row in rows}


def run_row_counts(spark: SparkSession, location: str) -> dict[str, int]:
    """How many rows of the table each run wrote (``_hw_run_id``); empty without a table."""
    if not _holds_table(spark, location):
        return {}
    rows = spark.read.format("delta").load(location).groupBy("_hw_run_id").count().collect()
    return {str(row["_hw_run_id"]): int(row["count"]) for row in rows}


def delete_runs(spark: SparkSession, location: str, run_ids: Sequence[str]) -> int:
    """Delete every row of ``run_ids`` in one Delta commit; return how many were deleted."""
    if not run_ids:
        return 0
    return _delete(spark, location, f"_hw_run_id IN ({', '.join(map(_literal, run_ids))})")


def delete_checkpoints(spark: SparkSession, location: str, run_id: str,
                       checkpoints: Sequence[int]) -> int:
    """Delete the rows ``run_id`` wrote in ``checkpoints`` in one Delta commit (none
    without a table); return how many were deleted."""
    if not checkpoints or not _holds_table(spark, location):
        return 0
    return _delete(spark, location, f"_hw_run_id = {_literal(run_id)} AND _hw_checkpoint IN "
                                    f"({', '.join(str(int(c)) for c in checkpoints)})")


def _holds_table(spark: SparkSession, location: str) -> bool:
    """Whether ``location`` holds a Delta table.

    Where the driver reaches the folder, delta-rs reads the log (milliseconds, as
    ``DeltaDestination.find_commit`` does); elsewhere, or when delta-rs cannot load
    the table, Spark's ``DESCRIBE DETAIL`` answers: a Spark job of about a second,
    which realign paid before each read of a table's log or rows."""
    folder = _driver_folder(spark, location)
    if folder is not None:
        try:
            return _delta_rs.latest_version(folder) is not None
        except Exception:  # a table delta-rs cannot load: Spark's to answer
            pass
    return is_delta_table(spark, location)


def _delete(spark: SparkSession, location: str, where: str) -> int:
    found = spark.sql(f"DELETE FROM {table_ref(location)} WHERE {where}").collect()
    return int(found[0][0]) if found and len(found[0]) else 0


def _literal(text: str) -> str:
    """``text`` as a Spark SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"
