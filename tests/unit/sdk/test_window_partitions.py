"""``Stream.window_partitions``: a backfill window in the stream's own partitioning."""

from __future__ import annotations

import pytest

from headwater.connectors.sample import SampleSource
from headwater.errors import ConfigError

SOURCE = {"users": 2000, "orders": 0, "rows_per_partition": 500}


def test_window_keeps_inner_partitions_and_clips_the_ends() -> None:
    stream = SampleSource(SOURCE).stream("users")
    parts = stream.window_partitions("2024-01-01T00:12:30Z", "2024-01-01T00:26:40Z")
    bounds = [(p.params["start"], p.params["end"]) for p in parts]
    assert bounds == [("2024-01-01T00:12:30Z", "2024-01-01T00:16:40Z"),
                      ("2024-01-01T00:16:40Z", "2024-01-01T00:25:00Z"),
                      ("2024-01-01T00:25:00Z", "2024-01-01T00:26:40Z")]
    whole = {p.id for p in stream.partitions(None)}
    assert parts[1].id in whole  # untouched partitions keep their id
    assert parts[0].id not in whole and parts[0].id.endswith("[2024-01-01T00:12:30Z,"
                                                             "2024-01-01T00:16:40Z)")
    assert sum(stream.estimate_rows(p) or 0 for p in parts) == 1600 - 750


def test_a_window_outside_the_data_plans_nothing() -> None:
    stream = SampleSource(SOURCE).stream("users")
    assert stream.window_partitions("2030-01-01T00:00:00Z", "2030-02-01T00:00:00Z") == []


def test_an_empty_window_is_refused() -> None:
    stream = SampleSource(SOURCE).stream("users")
    with pytest.raises(ConfigError, match="window is empty"):
        stream.window_partitions("2024-01-02T00:00:00Z", "2024-01-01T00:00:00Z")
