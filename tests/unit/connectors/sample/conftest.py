"""Helpers shared by the sample source tests: read a plan, merge syncs like append_dedup."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

from headwater.connectors.sample import SampleSource
from headwater.sdk import ConcurrentCursor, Partition, Stream


def read_partitions(stream: Stream, partitions: Iterable[Partition]) -> pa.Table:
    """Every batch of every partition, as one table (empty with no rows)."""
    batches = [batch for partition in partitions for batch in stream.read(partition)]
    if not batches:
        return pa.table({"id": pa.array([], pa.int64())})
    return pa.Table.from_batches(batches)


def latest_per_id(tables: Iterable[pa.Table]) -> pa.Table:
    """What ``incremental`` + ``append_dedup`` keeps: per id, the row with the latest cursor."""
    combined = pa.concat_tables([t for t in tables if t.num_rows])
    ordered = combined.sort_by([("id", "ascending"), ("updated_at", "descending")])
    ids = ordered.column("id").to_numpy()
    first = np.ones(len(ids), dtype=bool)
    first[1:] = ids[1:] != ids[:-1]
    return ordered.filter(pa.array(first))


def sync(
    source: SampleSource, name: str, state: Mapping[str, Any] | None
) -> tuple[pa.Table, dict[str, Any]]:
    """One incremental sync of one stream: read every planned partition, close them all."""
    stream = source.stream(name)
    plan = stream.partitions(state)
    table = read_partitions(stream, plan)
    cursor = stream.cursor(state, incremental=True)
    assert isinstance(cursor, ConcurrentCursor)
    for partition in plan:
        cursor.close_partition(partition)
    return table, cursor.state()


@pytest.fixture
def small_config() -> dict[str, Any]:
    """A world small enough to inspect, with several partitions per stream."""
    return {
        "users": 2_500,
        "orders": 4_000,
        "rows_per_partition": 1_000,
        "updates_per_generation": 7,
        "new_per_generation": 5,
    }
