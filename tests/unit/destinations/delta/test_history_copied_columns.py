"""Which columns a history MERGE sets back from the closed version's stored copy: every
column but the two it changes and those Delta computes itself (an identity column may
not be updated at all, so a MERGE setting it would fail every second sync)."""

from __future__ import annotations

from pyspark.sql.types import (
    BooleanType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from headwater.destinations.delta._destination import _copied


def test_all_but_the_closing_columns_and_delta_s_computed_ones() -> None:
    schema = StructType([
        StructField("id", LongType()),
        StructField("name", StringType()),
        StructField("row_id", LongType(), metadata={"delta.identity.start": 1,
                                                    "delta.identity.step": 1}),
        StructField("upper_name", StringType(),
                    metadata={"delta.generationExpression": "upper(name)"}),
        StructField("_hw_valid_from", TimestampType()),
        StructField("_hw_valid_to", TimestampType()),
        StructField("_hw_is_current", BooleanType()),
    ])
    assert _copied(schema) == ["id", "name", "_hw_valid_from"]
