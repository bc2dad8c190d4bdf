"""Where this process reaches a Delta table as Spark's driver does, if it does.

The task path (delta-rs on the driver, pyarrow on the executors) reaches a local
folder, S3 and Azure with the session's own Hadoop settings
(``_table_files._store``); a table whose credentials only Spark's connector can
get, and every table under Spark Connect, is reached through Spark alone.  Both the
commit lookups (``_commit_lookup.py``) and the writer choice (``_writability.py``)
ask here first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from headwater.config import register_secrets
from headwater.destinations._table_files._store import (
    TableFolder,
    local_folder,
    store_folder,
    store_refusal,
)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _driver_folder(spark: SparkSession, location: str) -> TableFolder | None:
    """``location`` as a folder this process reaches as Spark's driver does, or None.

    A local folder, or an S3 or Azure location reached with the ``fs.s3a.*`` or
    ``fs.azure.*`` settings of the session's Hadoop configuration
    (``_table_files._store.store_folder``; its secret values are registered with the masker
    here), unless Spark's connector is set to get its credentials some way
    pyarrow and delta-rs cannot follow: then Spark reaches it.  Under Spark
    Connect the driver (its filesystem and its settings) is the server's, so even
    a plain path is only reachable through Spark.
    """
    try:
        context = spark.sparkContext
    except Exception:
        return None
    local = local_folder(location)
    if local is not None:
        return TableFolder(local)
    hadoop = context._jsc.hadoopConfiguration()
    if store_refusal(location, hadoop.get):
        return None  # credentials only Spark's connector can get: the table is Spark's
    folder = store_folder(location, hadoop.get)
    if folder is not None and folder.store is not None:
        register_secrets(folder.store.secrets)
    return folder


def _store_refusal(spark: SparkSession, location: str) -> str | None:
    """:func:`store_refusal` of an object-store ``location`` in the session's settings
    (none under Spark Connect, where nothing reaches them)."""
    try:
        context = spark.sparkContext
    except Exception:
        return None
    return store_refusal(location, context._jsc.hadoopConfiguration().get)
