"""The statistics columns a new Delta table lists: useful metadata first, then data."""

from __future__ import annotations

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    LongType,
    StringType,
    StructField,
    TimestampType,
)

from headwater.destinations.delta._stats import MAX_STATS_COLUMNS, listed_columns, stats_columns


def test_meta_columns_first_then_eligible_data_columns() -> None:
    fields = [
        StructField("_hw_raw_id", StringType()), StructField("_hw_run_id", StringType()),
        StructField("id", LongType()), StructField("active", BooleanType()),
        StructField("tags", ArrayType(StringType())), StructField("odd name", TimestampType()),
    ]
    assert stats_columns(fields) == (
        "`_hw_extracted_at`,`_hw_run_id`,`_hw_checkpoint`,`id`,`odd name`")


def test_new_columns_are_appended_while_there_is_room() -> None:
    already = "`_hw_extracted_at`,`_hw_run_id`,`_hw_checkpoint`,`id`"
    added = [StructField("score", LongType()), StructField("id", LongType())]
    assert stats_columns(added, already=already) == already + ",`score`"
    many = [StructField(f"c{n}", LongType()) for n in range(100)]
    assert len(stats_columns(many).split(",")) == MAX_STATS_COLUMNS
    full = stats_columns(many)
    assert stats_columns([StructField("late", LongType())], already=full) == full


def test_listed_columns_reads_back_what_stats_columns_writes() -> None:
    fields = [StructField("id", LongType()), StructField("a,b", StringType()),
              StructField("x`y", StringType())]
    assert listed_columns(stats_columns(fields)) == [
        "_hw_extracted_at", "_hw_run_id", "_hw_checkpoint", "id", "a,b", "x`y"]
    assert listed_columns(None) == []
    assert listed_columns("plain, other") == ["plain", "other"]
