"""The tasks' split of a batch by partition value agrees with PyIceberg's transforms, row by row.

No Spark, no catalog: a table schema and spec built in memory, edge values
(before 1970, hour and day boundaries, nulls) split, and each group's value
checked against PyIceberg's own transform of every row in it.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.partitioning import PartitionField, PartitionSpec, partition_record_value
from pyiceberg.schema import Schema
from pyiceberg.transforms import parse_transform
from pyiceberg.types import LongType, NestedField, StringType, TimestamptzType

from headwater.destinations.iceberg._layout import _Key, split

SCHEMA = Schema(NestedField(1, "id", LongType()), NestedField(2, "ts", TimestamptzType()),
                NestedField(3, "name", StringType()))
UTC = dt.UTC
TIMES = [dt.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
         dt.datetime(1970, 1, 1, tzinfo=UTC), dt.datetime(1900, 2, 28, 12, tzinfo=UTC),
         dt.datetime(2024, 2, 29, 23, 0, tzinfo=UTC), dt.datetime(2024, 2, 29, 22, 59, tzinfo=UTC),
         dt.datetime(2024, 3, 1, tzinfo=UTC), None, dt.datetime(2023, 12, 31, 23, 59, tzinfo=UTC)]
BATCH = pa.RecordBatch.from_pydict({
    "id": [-7, 0, 1, 15, 16, None, 2**40, 3],
    "ts": pa.array(TIMES, pa.timestamp("us", tz="UTC")),
    "name": ["éa", "b", "", None, "abcdef", "ab", "éb", "a"]})


def _keys(*fields: tuple[str, str]) -> list[_Key]:
    ids = {"id": 1, "ts": 2, "name": 3}
    spec = PartitionSpec(*[PartitionField(source_id=ids[c], field_id=1000 + i,
                                          transform=parse_transform(t), name=f"{c}_{i}")
                           for i, (c, t) in enumerate(fields)])
    return [_Key(column=c, field=f, schema=SCHEMA) for (c, _), f in zip(fields, spec.fields,
                                                                           strict=True)]


def _truth(key: _Key, value: Any) -> Any:
    if value is None:
        return None
    source = SCHEMA.find_field(key.field.source_id).field_type
    return key.field.transform.transform(source)(partition_record_value(key.field, value,
                                                                         SCHEMA))


@pytest.mark.parametrize("fields", [
    [("ts", "year")], [("ts", "month")], [("ts", "day")], [("ts", "hour")],
    [("id", "bucket[4]")], [("name", "bucket[3]")], [("id", "truncate[10]")],
    [("name", "truncate[1]")], [("name", "identity")], [("ts", "day"), ("id", "bucket[2]")],
])
def test_each_group_holds_one_partition_value_as_pyiceberg_computes_it(
        fields: list[tuple[str, str]]) -> None:
    keys = _keys(*fields)
    seen = 0
    values = set()
    for value, rows in split(BATCH, keys):
        seen += rows.num_rows
        values.add(value)
        for row in rows.to_pylist():
            assert value == tuple(_truth(k, row[k.column]) for k in keys), (value, row)
    assert seen == BATCH.num_rows
    everything = {tuple(_truth(k, row[k.column]) for k in keys) for row in BATCH.to_pylist()}
    assert values == everything  # one group per partition value, none split in two


def test_a_key_null_on_every_row_beside_one_that_varies() -> None:
    batch = BATCH.slice(0, 5).set_column(2, "name", pa.array([None] * 5, pa.string()))
    keys = _keys(("name", "bucket[3]"), ("id", "identity"))
    groups = {value: rows.num_rows for value, rows in split(batch, keys)}
    assert groups == {(None, i): 1 for i in [-7, 0, 1, 15, 16]}


def test_a_batch_of_one_partition_is_handed_on_whole() -> None:
    same_day = BATCH.slice(3, 2)
    [(value, rows)] = list(split(same_day, _keys(("ts", "day"))))
    assert rows is same_day and value == (19782,)
