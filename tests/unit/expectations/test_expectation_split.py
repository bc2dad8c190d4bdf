"""A task writing two tables (``_split.py``): the checked task hands its quarantined rows
(with the names of the expectations each failed) to the quarantine table's writer, its
kept rows to the stream's, and says which file is whose; the counts count both."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from headwater.expectations._arrow import FAILED_COLUMN, CountsParam, TaskChecks
from headwater.expectations._split import QUARANTINE_FILE, SplitWriter

ROWS = pa.schema([("_hw_partition_id", pa.string()), ("id", pa.int64()), ("age", pa.int64()),
                  ("country", pa.string())])
QUARANTINE_ROWS = pa.schema([*ROWS, pa.field(FAILED_COLUMN, pa.list_(pa.string()))])
DESCRIBED = pa.schema([("rows", pa.int64()), ("ids", pa.string())])
CHECKS = TaskChecks("users", (("not_senior", "warn", "age < 80"),
                              ("adult", "drop", "age >= 25"),
                              ("not_de", "quarantine", "country <> 'DE'")))


@dataclass
class Written:
    """A file writer that keeps what it was given (and describes each batch as a file)."""

    batches: list[pa.RecordBatch] = field(default_factory=list)

    @property
    def schema(self) -> pa.Schema:
        return DESCRIBED

    def around(self, task: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]],
               ) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
        def run(positions: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            for batch in task(positions):
                self.batches.append(batch)
                yield pa.RecordBatch.from_pylist(
                    [{"rows": batch.num_rows, "ids": ",".join(map(str, batch["id"].to_pylist()))}],
                    schema=DESCRIBED)

        return run


class Counts:
    """The accumulator's ``add``, in the test process."""

    def __init__(self) -> None:
        self.value: dict[str, list[int]] = {}

    def add(self, term: dict[str, list[int]]) -> None:
        CountsParam().addInPlace(self.value, term)


def _source(_: Iterator[Any]) -> Iterator[pa.RecordBatch]:
    yield pa.RecordBatch.from_pylist([
        {"_hw_partition_id": "p1", "id": 1, "age": 30, "country": "FR"},
        {"_hw_partition_id": "p1", "id": 2, "age": 90, "country": "DE"},   # warn + quarantine
        {"_hw_partition_id": "p1", "id": 3, "age": 20, "country": "DE"},   # drop + quarantine
        {"_hw_partition_id": "p2", "id": 4, "age": 10, "country": "IT"},   # drop
        {"_hw_partition_id": "p2", "id": 5, "age": None, "country": None},  # NULLs pass
    ], schema=ROWS)
    yield pa.RecordBatch.from_pylist([
        {"_hw_partition_id": "p2", "id": 6, "age": 50, "country": "ES"}], schema=ROWS)


def test_kept_and_quarantined_rows_go_to_their_own_writers_in_one_task() -> None:
    kept, quarantine, counts = Written(), Written(), Counts()
    writer = SplitWriter(kept, quarantine, QUARANTINE_ROWS)

    described = list(writer.around(
        lambda held: CHECKS.around(_source, counts, ROWS, held))(iter(())))  # type: ignore[arg-type]

    assert writer.schema.names == [*DESCRIBED.names, QUARANTINE_FILE]
    assert [(d["ids"][0].as_py(), d[QUARANTINE_FILE][0].as_py()) for d in described] == [
        ("1,5", False), ("6", False), ("2,3", True)]
    assert [b["id"].to_pylist() for b in kept.batches] == [[1, 5], [6]]
    (held,) = quarantine.batches
    assert held.schema == QUARANTINE_ROWS
    assert held.to_pylist() == [
        {"_hw_partition_id": "p1", "id": 2, "age": 90, "country": "DE",
         FAILED_COLUMN: ["not_senior", "not_de"]},
        {"_hw_partition_id": "p1", "id": 3, "age": 20, "country": "DE",
         FAILED_COLUMN: ["adult", "not_de"]}]
    # [evaluated, not_senior, adult, not_de, removed (dropped or quarantined)]
    assert counts.value == {"p1": [3, 1, 1, 2, 2], "p2": [3, 0, 1, 0, 1]}


def test_a_task_quarantining_nothing_writes_no_quarantine_file() -> None:
    kept, quarantine = Written(), Written()

    def clean(_: Iterator[Any]) -> Iterator[pa.RecordBatch]:
        yield pa.RecordBatch.from_pylist(
            [{"_hw_partition_id": "p", "id": 1, "age": 30, "country": "FR"}], schema=ROWS)

    described = list(SplitWriter(kept, quarantine, QUARANTINE_ROWS).around(
        lambda held: CHECKS.around(clean, Counts(), ROWS, held))(iter(())))  # type: ignore[arg-type]

    assert [d[QUARANTINE_FILE][0].as_py() for d in described] == [False]
    assert quarantine.batches == []
