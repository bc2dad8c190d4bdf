"""What every destination's ``read_table`` shares: the columns asked that a table has, and
the small DataFrame of work items (files, page ranges) its tasks read from.

``Destination.read_table`` returns a Spark DataFrame of only the columns asked; a
reader that runs in ``mapInArrow`` (Iceberg's files, the files destination, PostgreSQL's
pages) cannot be pruned by Spark afterwards, so each reads only :func:`present`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["conform", "parallelism", "present", "select_present", "work_items"]


def present(available: Sequence[str], columns: Sequence[str] | None) -> list[str]:
    """Of ``columns`` (None: all), those in ``available``, once each, in the order asked."""
    if columns is None:
        return list(available)
    have = set(available)
    return [c for c in dict.fromkeys(columns) if c in have]


def select_present(frame: DataFrame, columns: Sequence[str] | None) -> DataFrame:
    """``frame``'s ``columns`` that it has, in the order asked (None: ``frame`` as it is)."""
    from headwater.destinations._merge_rule import quote

    if columns is None:
        return frame
    return frame.select(*[quote(c) for c in present(frame.columns, columns)])


def work_items(spark: SparkSession, items: Sequence[tuple[Any, ...]], ddl: str) -> DataFrame:
    """``items`` as a DataFrame of ``ddl``'s columns, spread over as many partitions as the
    session runs tasks at once (at most one item each), for ``mapInArrow`` to read."""
    slices = max(1, min(len(items), parallelism(spark)))
    return spark.createDataFrame(list(items), ddl).repartition(slices)


def parallelism(spark: SparkSession) -> int:
    """How many tasks the session runs at once."""
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:  # Spark Connect has no SparkContext on the client
        return int(spark.conf.get("spark.default.parallelism", "4") or 4)


def conform(piece: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """``piece`` as ``schema``: its columns by name, cast to their types; a column it lacks
    (its file predates the column) all null."""
    names = piece.schema.names
    arrays = [piece.column(f.name).cast(f.type) if f.name in names
              else pa.nulls(piece.num_rows, f.type) for f in schema]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
