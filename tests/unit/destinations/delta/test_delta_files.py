"""Files the tasks write themselves: Parquet as Spark would read it, with Delta's statistics."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from headwater.destinations._table_files._parquet import FILE_SCHEMA, ParquetFiles

SCHEMA = pa.schema([
    pa.field("id", pa.int64()),
    pa.field("name", pa.string()),
    pa.field("at", pa.timestamp("us", tz="UTC")),
    pa.field("day", pa.date32()),
    pa.field("score", pa.float64()),
    pa.field("_hw_notes", pa.list_(pa.string())),
])


def batch(ids: list[int], names: list[str | None], notes: list[list[str] | None] | None = None,
          ) -> pa.RecordBatch:
    n = len(ids)
    return pa.RecordBatch.from_pydict({
        "id": ids, "name": names,
        "at": [dt.datetime(2024, 1, 1, 0, 0, i, 123456, tzinfo=dt.UTC) for i in ids],
        "day": [dt.date(2024, 1, 1 + i) for i in ids],
        "score": [float("nan")] * n,
        "_hw_notes": notes if notes is not None else [None] * n,
    }, schema=SCHEMA)


def described(rows: list[pa.RecordBatch]) -> list[dict[str, object]]:
    assert all(b.schema == FILE_SCHEMA for b in rows)
    return [r for b in rows for r in b.to_pylist()]


def test_a_task_writes_one_file_with_its_rows_rejects_and_statistics(tmp_path: Path) -> None:
    writer = ParquetFiles(folder=str(tmp_path), stats_columns=["id", "name", "at", "day",
                                                               "score", "missing"])
    files = described(list(writer.write(iter([
        batch([3, 1], ["b", None], notes=[None, ["name: not a string"]]),
        pa.RecordBatch.from_pylist([], schema=SCHEMA),
        batch([2], ["a"]),
    ]))))
    (only,) = files
    assert only["rows"] == 3 and only["rejected"] == 1
    path = tmp_path / str(only["path"])
    assert path.name.startswith("part-") and path.name.endswith(".snappy.parquet")
    assert only["size"] == path.stat().st_size
    table = pq.read_table(path)
    assert table.schema == SCHEMA and table.column("id").to_pylist() == [3, 1, 2]
    stats = json.loads(str(only["stats"]))
    assert stats == {
        "numRecords": 3,
        "minValues": {"id": 1, "name": "a", "at": "2024-01-01T00:00:01.123456Z",
                      "day": "2024-01-02"},
        "maxValues": {"id": 3, "name": "b", "at": "2024-01-01T00:00:03.123456Z",
                      "day": "2024-01-04"},
        # Floats get no bounds (NaN); a column the batches lack gets nothing.
        "nullCount": {"id": 0, "name": 1, "at": 0, "day": 0, "score": 0},
    }


def test_long_strings_get_a_prefix_as_minimum_and_no_maximum(tmp_path: Path) -> None:
    long = "x" * 40
    writer = ParquetFiles(folder=str(tmp_path), stats_columns=["name"])
    (only,) = described(list(writer.write(iter([batch([1, 2], [long, long + "y"])]))))
    stats = json.loads(str(only["stats"]))
    assert stats["minValues"] == {"name": "x" * 32} and stats["maxValues"] == {}


def test_files_roll_over_and_an_empty_task_writes_none(tmp_path: Path) -> None:
    writer = ParquetFiles(folder=str(tmp_path), stats_columns=[], max_rows_per_file=2)
    files = described(list(writer.write(iter([batch([1, 2], ["a", "b"]), batch([3], ["c"])]))))
    assert [f["rows"] for f in files] == [2, 1]
    assert list(writer.write(iter([]))) == []
    assert len(list(tmp_path.iterdir())) == 2


def test_a_failing_task_leaves_no_file_behind(tmp_path: Path) -> None:
    def failing() -> Iterator[pa.RecordBatch]:
        yield batch([1], ["a"])
        raise RuntimeError("the source broke")

    writer = ParquetFiles(folder=str(tmp_path), stats_columns=["id"])
    with pytest.raises(RuntimeError, match="the source broke"):
        list(writer.write(failing()))
    assert list(tmp_path.iterdir()) == []


def test_around_wraps_a_map_in_arrow_task(tmp_path: Path) -> None:
    def task(positions: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for _ in positions:
            yield batch([1], ["a"])

    run = ParquetFiles(folder=str(tmp_path), stats_columns=[]).around(task)
    files = described(list(run(iter([pa.RecordBatch.from_pydict({"id": [0]})]))))
    assert [f["rows"] for f in files] == [1]


def test_a_batch_encoded_differently_joins_the_same_file(tmp_path: Path) -> None:
    first = batch([1], ["a"])
    strict = pa.schema([f.with_nullable(False) if f.name == "id" else f for f in SCHEMA])
    second = batch([2], ["b"]).cast(strict)
    writer = ParquetFiles(folder=str(tmp_path), stats_columns=[])
    (only,) = described(list(writer.write(iter([first, second]))))
    assert pq.read_table(tmp_path / str(only["path"])).column("id").to_pylist() == [1, 2]


def test_small_batches_are_gathered_into_row_groups(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from headwater.destinations._table_files import _parquet

    monkeypatch.setattr(_parquet, "ROW_GROUP_ROWS", 4)
    writer = ParquetFiles(folder=str(tmp_path), stats_columns=[])
    (only,) = described(list(writer.write(iter([batch([i], ["a"]) for i in range(1, 10)]))))
    metadata = pq.ParquetFile(tmp_path / str(only["path"])).metadata
    assert [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)] == [4, 4, 1]


def test_timestamp_ntz_statistics_carry_no_zone_as_delta_spark_writes_them(
        tmp_path: Path) -> None:
    """Spark parses an ntz statistic ending in ``Z`` as null: the file would never be skipped."""
    schema = pa.schema([("local", pa.timestamp("us")), ("at", pa.timestamp("us", tz="UTC"))])
    rows = pa.RecordBatch.from_pydict({
        "local": [dt.datetime(1850, 1, 1, 0, 0, 0, 123456), dt.datetime(2024, 5, 6, 7, 8, 9, 5)],
        "at": [dt.datetime(1850, 1, 1, tzinfo=dt.UTC), dt.datetime(2024, 5, 6, tzinfo=dt.UTC)],
    }, schema=schema)
    writer = ParquetFiles(folder=str(tmp_path), stats_columns=["local", "at"])
    (only,) = described(list(writer.write(iter([rows]))))
    stats = json.loads(str(only["stats"]))
    assert stats["minValues"] == {"local": "1850-01-01T00:00:00.123456",
                                  "at": "1850-01-01T00:00:00.000000Z"}
    assert stats["maxValues"] == {"local": "2024-05-06T07:08:09.000005",
                                  "at": "2024-05-06T00:00:00.000000Z"}


FLOATS = pa.schema([
    pa.field("id", pa.int64()), pa.field("f32", pa.float32()), pa.field("f64", pa.float64()),
    pa.field("point", pa.struct([("x", pa.float64()), ("label", pa.string())])),
    pa.field("scores", pa.list_(pa.float32())),
])


def test_float_columns_get_no_bounds_in_delta_statistics(tmp_path: Path) -> None:
    """NaN, -0.0 and ±inf: Delta's statistics of floats hold their null count only."""
    rows = pa.RecordBatch.from_pydict({
        "id": [1, 2, 3], "f32": [float("nan"), -0.0, None], "f64": [float("inf"), 0.0, -0.0],
        "point": [{"x": float("nan"), "label": "a"}, None, {"x": -0.0, "label": "b"}],
        "scores": [[1.0], None, [float("nan")]],
    }, schema=FLOATS)
    writer = ParquetFiles(folder=str(tmp_path), stats_columns=["id", "f32", "f64"])
    (only,) = described(list(writer.write(iter([rows]))))
    assert json.loads(str(only["stats"])) == {
        "numRecords": 3, "minValues": {"id": 1}, "maxValues": {"id": 3},
        "nullCount": {"id": 0, "f32": 1, "f64": 0}}


def test_float_columns_get_no_row_group_statistics_nor_dictionary(tmp_path: Path) -> None:
    """Spark would skip row groups holding NaN (left out of Arrow's bounds) or -0.0
    (in a dictionary, which parquet-mr tests with Java's equals): nested floats too."""
    rows = pa.RecordBatch.from_pydict({
        "id": [1, 1, 2], "f32": [1.0, float("nan"), -0.0], "f64": [1.0, float("nan"), -0.0],
        "point": [{"x": 1.0, "label": "a"}, {"x": float("nan"), "label": "a"}, None],
        "scores": [[1.0, -0.0], None, [float("nan")]],
    }, schema=FLOATS)
    writer = ParquetFiles(folder=str(tmp_path), stats_columns=[])
    (only,) = described(list(writer.write(iter([rows]))))
    metadata = pq.ParquetFile(tmp_path / str(only["path"])).metadata
    columns = {metadata.row_group(0).column(i).path_in_schema: metadata.row_group(0).column(i)
               for i in range(metadata.num_columns)}
    floats = {"f32", "f64", "point.x", "scores.list.element"}
    assert floats < set(columns)
    for path, column in columns.items():
        has_bounds = column.statistics is not None and column.statistics.has_min_max
        dictionary = any("DICTIONARY" in encoding for encoding in column.encodings)
        assert (has_bounds, dictionary) == ((False, False) if path in floats else (True, True)), (
            path)
