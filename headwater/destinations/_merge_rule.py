"""``append_dedup``'s one rule, shared by every destination that merges: which row of a key wins.

Why a module of its own: the Delta destination says it with a Spark ``MERGE``
and the Iceberg destination by rewriting files (copy-on-write), and a table
must not depend on which of the two wrote it.  Both take the rule from here:

* among the rows of one checkpoint, per primary key, the latest cursor wins
  (a null cursor loses to any value); ties go to the later checkpoint, then the
  later partition of the plan, then the later record of that partition
  (:func:`latest_first`);
* that row replaces a row the table holds for the key when :func:`update_when`
  holds: the table's cursor is null, or the new one is larger, or they are
  equal and the new row's checkpoint is not earlier.  Otherwise the table's row
  stays and the new one is dropped (as ``MERGE ... WHEN MATCHED AND ...`` does).

Keys match null-safely (``<=>``): a null key is a key like any other.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame


def quote(name: str) -> str:
    """A backtick-quoted SQL identifier."""
    return "`" + name.replace("`", "``") + "`"


def latest_first(partition_order: Sequence[str]) -> list[Column]:
    """The tie rule's order, latest first: checkpoint, partition in the plan, record number.

    ``_hw_raw_id`` is ``<partition digest>-<record number>``: neither part orders
    as text (the digest is a hash, and "9" sorts after "11"), so the partition's
    place comes from the plan and the record number is compared as a number.
    """
    checkpoint, place, record = _tie_terms(partition_order)
    position = [place.desc_nulls_first()] if place is not None else []
    return [checkpoint.desc(), *position, record.desc()]


def earliest_first(partition_order: Sequence[str]) -> list[Column]:
    """:func:`latest_first` the other way round: the order in which ties happened."""
    checkpoint, place, record = _tie_terms(partition_order)
    position = [place.asc_nulls_last()] if place is not None else []
    return [checkpoint.asc(), *position, record.asc()]


def _tie_terms(partition_order: Sequence[str]) -> tuple[Column, Column | None, Column]:
    """The tie rule's terms, each larger for a later row: checkpoint, place, record."""
    from pyspark.sql import functions as F

    place = F.create_map(*[F.lit(x) for i, pid in enumerate(partition_order)
                           for x in (pid, i)]) if partition_order else None
    record = F.substring_index(F.col("_hw_raw_id"), "-", -1).cast("bigint")
    return (F.col("_hw_checkpoint"),
            place[F.col("_hw_partition_id")] if place is not None else None, record)


def batch_order(cursor: str | None, partition_order: Sequence[str]) -> list[Column]:
    """The order of one checkpoint's rows of a key, the winner first."""
    from pyspark.sql import functions as F

    return ([F.col(cursor).desc_nulls_last()] if cursor else []) + latest_first(partition_order)


def latest_rows(rows: DataFrame, keys: Sequence[str], cursor: str | None,
                partition_order: Sequence[str]) -> DataFrame:
    """``rows`` (one checkpoint's), one per primary key: the winner by :func:`batch_order`."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    rank = F.row_number().over(Window.partitionBy(*[F.col(k) for k in keys])
                               .orderBy(*batch_order(cursor, partition_order)))
    return rows.withColumn("_hw_rank", rank).where(F.col("_hw_rank") == 1).drop("_hw_rank")


def keys_match(keys: Sequence[str]) -> str:
    """SQL over aliases ``t`` (the table) and ``s`` (the batch): the primary keys match."""
    return " AND ".join(f"t.{quote(k)} <=> s.{quote(k)}" for k in keys)


def update_when(cursor: str | None) -> str:
    """SQL over ``t`` and ``s``: the batch's row of a key replaces the table's."""
    if not cursor:
        return "s._hw_checkpoint >= t._hw_checkpoint"
    c = quote(cursor)
    return (f"t.{c} IS NULL OR s.{c} > t.{c} OR "
            f"(s.{c} = t.{c} AND s._hw_checkpoint >= t._hw_checkpoint)")


__all__ = ["batch_order", "earliest_first", "keys_match", "latest_first", "latest_rows", "quote",
           "update_when"]
