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
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
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
    detail = table_detail(spark, location)
    return None if detail is None else dict(detail.properties)


@dataclass(frozen=True)
class TableDetail:
    """What ``DESCRIBE DETAIL`` says of a Delta table's layout and properties."""

    properties: Mapping[str, str]
    partition_columns: tuple[str, ...] = ()
    #: Liquid clustering's columns (empty: the table is not clustered).
    clustering_columns: tuple[str, ...] = ()


def table_detail(spark: SparkSession, location: str) -> TableDetail | None:
    """The Delta table's properties and layout, or None when ``location`` holds no Delta table."""
    from pyspark.errors import AnalysisException

    try:
        detail = spark.sql(f"DESCRIBE DETAIL {table_ref(location)}").select(
            "format", "properties", "partitionColumns", "clusteringColumns").collect()
    except AnalysisException as exc:
        if exc.getCondition() == _NOT_A_DELTA_TABLE:
            return None
        raise
    if not detail or detail[0]["format"] != "delta":
        return None
    row = detail[0]
    return TableDetail(properties=dict(row["properties"] or {}),
                       partition_columns=tuple(row["partitionColumns"] or ()),
                       clustering_columns=tuple(row["clusteringColumns"] or ()))


def file_count(spark: SparkSession, location: str) -> int:
    """How many data files the latest version of the Delta table at ``location`` holds."""
    row = spark.sql(f"DESCRIBE DETAIL {table_ref(location)}").select("numFiles").first()
    return int(row[0] or 0) if row is not None else 0


def create_table(spark: SparkSession, location: str, empty: DataFrame, *,
                 partition_by: Sequence[str] = (), cluster_by: Sequence[str] = (),
                 properties: Mapping[str, str] | None = None) -> None:
    """Create the Delta table at ``location`` with ``empty``'s columns, laid out as asked.

    ``CREATE TABLE ... AS SELECT`` from the (empty) rows: the one statement that
    sets partitioning, liquid clustering and table properties in the table's first
    commit (the DataFrame writer drops ``clusterBy`` and every property not named
    ``delta.*``), without spelling each column's type out as DDL.  A table that
    exists already is left as it is (``IF NOT EXISTS``).
    """
    with _view_numbers_lock:
        view = f"_hw_new_table_{next(_view_numbers)}"
    clauses = []
    if partition_by:
        clauses.append(f"PARTITIONED BY ({', '.join(quote(c) for c in partition_by)})")
    if cluster_by:
        clauses.append(f"CLUSTER BY ({', '.join(quote(c) for c in cluster_by)})")
    if properties:
        listed = ", ".join(f"{literal(k)} = {literal(v)}" for k, v in properties.items())
        clauses.append(f"TBLPROPERTIES ({listed})")
    empty.createOrReplaceTempView(view)
    try:
        spark.sql(f"CREATE TABLE IF NOT EXISTS {table_ref(location)} USING delta "
                  f"{' '.join(clauses)} AS SELECT * FROM {quote(view)}")
    finally:
        spark.catalog.dropTempView(view)


def set_properties(spark: SparkSession, location: str, properties: Mapping[str, str]) -> None:
    """``ALTER TABLE ... SET TBLPROPERTIES`` on the table at ``location`` (one commit)."""
    listed = ", ".join(f"{literal(k)} = {literal(v)}" for k, v in properties.items())
    spark.sql(f"ALTER TABLE {table_ref(location)} SET TBLPROPERTIES ({listed})")


def literal(text: str) -> str:
    """``text`` as a single-quoted SQL string literal."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def history(spark: SparkSession, location: str, latest: int | None = None) -> DataFrame:
    """The table's commit history, newest first (only the ``latest`` commits when given)."""
    limit = f" LIMIT {int(latest)}" if latest else ""
    return spark.sql(f"DESCRIBE HISTORY {table_ref(location)}{limit}")


def latest_version(spark: SparkSession, location: str) -> int:
    """The table's latest commit version."""
    row = history(spark, location, 1).select("version").first()
    if row is None:
        raise ValueError(f"the Delta table at {location} has no commit")
    return int(row[0])


def merge(spark: SparkSession, location: str, source: DataFrame, *, on: str,
          update_when: str, deleted: str | None = None) -> None:
    """``MERGE INTO`` the table at ``location`` from ``source`` (aliases ``t`` and ``s``).

    Matched rows are updated (all columns) when ``update_when`` holds; rows
    with no match are inserted.  Both conditions are SQL over ``t``/``s``.
    ``deleted`` names the source's delete flag column for hard deletes: a
    flagged row that beats the table's deletes it instead, and one with no
    match is not inserted.
    """
    flag = f"coalesce(s.{quote(deleted)}, false)" if deleted else None
    with _source_view(spark, source) as view:
        spark.sql(
            f"MERGE INTO {table_ref(location)} AS t USING {quote(view)} AS s ON {on} "
            + (f"WHEN MATCHED AND ({update_when}) AND {flag} THEN DELETE " if flag else "")
            + f"WHEN MATCHED AND ({update_when}) THEN UPDATE SET * "
            + (f"WHEN NOT MATCHED AND NOT {flag} THEN INSERT *" if flag
               else "WHEN NOT MATCHED THEN INSERT *")
        )


def merge_history(spark: SparkSession, location: str, source: DataFrame, *, keys_match: str,
                  action: str, columns: Sequence[str], valid_from: str, valid_to: str,
                  is_current: str, was: str, copied: Sequence[str]) -> None:
    """One ``MERGE INTO`` that closes versions and opens others (``_history_rule.py``).

    ``source``'s rows whose ``action`` column is ``close`` name a current version
    by its keys and ``valid_from``, give its ``valid_to``, and in the struct ``was``
    its stored columns, of which ``copied`` are set back as they were: a column the
    update sets from the source is one the MERGE need not read from every row of
    the table.  Those whose action is ``open`` are new versions, inserted with
    ``columns``.  One commit, so a reader never sees a key with two current
    versions, or none between two.
    """
    names = ", ".join(quote(c) for c in columns)
    values = ", ".join(f"s.{quote(c)}" for c in columns)
    f, to, cur = quote(valid_from), quote(valid_to), quote(is_current)
    sets = ", ".join([*(f"t.{quote(c)} = s.{quote(was)}.{quote(c)}" for c in copied),
                      f"t.{to} = s.{to}", f"t.{cur} = false"])
    with _source_view(spark, source) as view:
        spark.sql(
            f"MERGE INTO {table_ref(location)} AS t USING {quote(view)} AS s "
            f"ON s.{quote(action)} = 'close' AND {keys_match} AND t.{cur} "
            f"AND t.{f} <=> s.{f} "
            f"WHEN MATCHED THEN UPDATE SET {sets} "
            f"WHEN NOT MATCHED AND s.{quote(action)} = 'open' THEN INSERT ({names}) "
            f"VALUES ({values})"
        )


@contextmanager
def _source_view(spark: SparkSession, source: DataFrame) -> Iterator[str]:
    """``source`` as a temporary view of a name of its own, dropped afterwards."""
    with _view_numbers_lock:
        view = f"_hw_merge_source_{next(_view_numbers)}"
    source.createOrReplaceTempView(view)
    try:
        yield view
    finally:
        spark.catalog.dropTempView(view)
