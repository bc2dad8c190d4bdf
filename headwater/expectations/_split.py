"""One task writes two tables: the rows the stream's table keeps, and the rows its
``quarantine`` expectations took out, each through its own table's writer.

Why in the task: the task that types the rows already evaluates the expectations
(:mod:`._arrow`), and already writes the stream's files (or COPYs its rows); handing
the quarantined rows to a second writer there costs only their own writing.  The
earlier way, a Spark Delta write of the quarantined rows from the driver, took the
whole checkpoint into the JVM and back (bench/RESULTS.md, "Expectations").

The task's output is one row per file (or per COPY) as each writer describes it, and
:data:`QUARANTINE_FILE` says which table the file is for; :func:`split_files` collects
those few rows once and hands each table's commit its own.  A task holds its
quarantined rows in memory until its kept rows are written (both writers close their
files in one task); quarantined rows are the exception a check catches, not the bulk
(``partitions_per_checkpoint`` bounds a task's share either way).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from headwater.destinations._base import FileWriter

ArrowTask = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]
#: A checked task, given where its quarantined batches go.
CheckedTask = Callable[[Callable[[pa.RecordBatch], None]], ArrowTask]

#: The column of a split task's output saying the file is the quarantine table's.
QUARANTINE_FILE = "_hw_quarantine_file"


def typed_as(schema: pa.Schema, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """``batches`` with the columns and types of ``schema`` (Spark's Arrow, or the rows
    as the stream types them, may differ from a table's: a timestamp's zone, a
    nullability, a type the table keeps)."""
    for batch in batches:
        yield pa.RecordBatch.from_arrays(
            [batch.column(field.name).cast(field.type) for field in schema], schema=schema)


@dataclass(frozen=True)
class SplitWriter:
    """The stream's writer and its quarantine table's, around one checked task
    (pickled with the task: both writers are plain values)."""

    kept: FileWriter
    quarantine: FileWriter
    #: The quarantine table's rows: its metadata and data columns, in its types.
    quarantine_schema: pa.Schema

    @property
    def schema(self) -> pa.Schema:
        return pa.schema([*self.kept.schema,
                          pa.field(QUARANTINE_FILE, pa.bool_(), nullable=False)])

    def around(self, checked: CheckedTask) -> ArrowTask:
        kept, quarantine, schema = self.kept, self.quarantine, self.quarantine_schema

        def run(positions: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            held: list[pa.RecordBatch] = []
            for described in kept.around(checked(held.append))(positions):
                yield _marked(described, False)
            if held:
                write = quarantine.around(lambda _: typed_as(schema, iter(held)))
                for described in write(iter(())):
                    yield _marked(described, True)

        return run


def _marked(described: pa.RecordBatch, quarantined: bool) -> pa.RecordBatch:
    return described.append_column(
        pa.field(QUARANTINE_FILE, pa.bool_(), nullable=False),
        pa.array([quarantined] * described.num_rows, pa.bool_()))


def split_files(spark: SparkSession,
                described: DataFrame) -> tuple[DataFrame, DataFrame, bool]:
    """Run the checkpoint's split tasks (one Spark job) and part what they describe:
    the stream's files, the quarantine table's, and whether any row was quarantined.

    Both come back as small local DataFrames, which each table's commit collects as it
    collects its own tasks' rows."""
    from pyspark.sql.types import StructType

    rows = described.collect()
    schema = StructType([f for f in described.schema.fields if f.name != QUARANTINE_FILE])
    names = schema.fieldNames()
    kept = [tuple(row[n] for n in names) for row in rows if not row[QUARANTINE_FILE]]
    held = [tuple(row[n] for n in names) for row in rows if row[QUARANTINE_FILE]]
    return spark.createDataFrame(kept, schema), spark.createDataFrame(held, schema), bool(held)


__all__ = ["QUARANTINE_FILE", "SplitWriter", "split_files", "typed_as"]
