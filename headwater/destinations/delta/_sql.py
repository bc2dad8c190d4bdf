"""Delta Lake operations in SQL, so one code path serves classic Spark and Spark Connect.

delta-spark's Python ``DeltaTable`` talks to a Spark Connect server through the
Delta Connect server plugin, and Maven Central carries no build of that plugin
for Spark 4.2 (``io.delta:delta-connect-server_*`` answers 404, checked
2026-11-22).  Delta's SQL (``DESCRIBE DETAIL``, ``DESCRIBE HISTORY``,
``MERGE INTO``) needs only the Delta session extension, which any Delta-enabled
server has, so the destination speaks SQL on both kinds of session.

Idempotency keys for ``MERGE`` are session confs either way (see
``_destination``); temporary views are session-scoped, so each MERGE names its
own source view and drops it afterwards.
"""

from __future__ import annotations

import itertools
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: The error condition Delta raises for a path that holds no Delta table.
_NOT_A_DELTA_TABLE = "DELTA_MISSING_DELTA_TABLE"

_view_numbers = itertools.count()
_view_numbers_lock = threading.Lock()


def quote(name: str) -> str:
    """A backtick-quoted SQL identifier (a column name or a table path)."""
    return "`" + name.replace("`", "``") + "`"


def table_ref(location: str) -> str:
    """The SQL name of the Delta table at ``location``: delta.`<path>`."""
    return f"delta.{quote(location)}"


def is_delta_table(spark: SparkSession, location: str) -> bool:
    """Whether ``location`` holds a Delta table (False for a missing or non-Delta path)."""
    return table_properties(spark, location) is not None


def table_properties(spark: SparkSession, location: str) -> dict[str, str] | None:
    """The Delta table's properties, or None when ``location`` holds no Delta table."""
    from pyspark.errors import AnalysisException

    try:
        detail = spark.sql(f"DESCRIBE DETAIL {table_ref(location)}").select(
            "format", "properties").collect()
    except AnalysisException as exc:
        if exc.getCondition() == _NOT_A_DELTA_TABLE:
            return None
        raise
    if not detail or detail[0]["format"] != "delta":
        return None
    return dict(detail[0]["properties"] or {})


def history(spark: SparkSession, location: str, latest: int | None = None) -> DataFrame:
    """The table's commit history, newest first (only the ``latest`` commits when given)."""
    limit = f" LIMIT {int(latest)}" if latest else ""
    return spark.sql(f"DESCRIBE HISTORY {table_ref(location)}{limit}")


def merge(spark: SparkSession, location: str, source: DataFrame, *, on: str,
          update_when: str) -> None:
    """``MERGE INTO`` the table at ``location`` from ``source`` (aliases ``t`` and ``s``).

    Matched rows are updated (all columns) when ``update_when`` holds; rows
    with no match are inserted.  Both conditions are SQL over ``t``/``s``.
    """
    with _view_numbers_lock:
        view = f"_hw_merge_source_{next(_view_numbers)}"
    source.createOrReplaceTempView(view)
    try:
        spark.sql(
            f"MERGE INTO {table_ref(location)} AS t USING {quote(view)} AS s ON {on} "
            f"WHEN MATCHED AND ({update_when}) THEN UPDATE SET * "
            "WHEN NOT MATCHED THEN INSERT *"
        )
    finally:
        spark.catalog.dropTempView(view)

