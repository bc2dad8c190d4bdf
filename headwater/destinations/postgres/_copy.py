"""The executors' side: each Spark task COPYs its rows (binary) into the checkpoint's staging.

Why pgpq with psycopg's ``copy`` and not ADBC's ``adbc_ingest`` (also COPY
binary from Arrow, and already a dependency for the source's reads): measured on
this project's 2-core machine, 2,000,000 rows of the ``orders`` shape into an
UNLOGGED table took 2.9-3.5 s of wall time and 0.45 s of the client's CPU with
pgpq, 3.4-4.1 s and 1.9 s with ADBC (``bench/RESULTS.md``).  The client's CPU
is what an executor shares with the reading task beside it, so pgpq.

A task writes in one transaction of its own, which first deletes what an
earlier attempt of the same Spark task left (``_hw_task`` is the task's
partition number; an advisory lock keeps a speculative twin out meanwhile):
a task Spark runs again never stages its rows twice.  Nothing of a task is
seen before its transaction commits, and staging is invisible to readers of the
table anyway: only the driver's commit moves it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from headwater.destinations.postgres._config import PostgresDestinationConfig
from headwater.destinations.postgres._fit import Column, fit_batch

if TYPE_CHECKING:
    from pgpq import ArrowToPostgresBinaryEncoder

ArrowTask = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]

#: The staging table's extra column: the Spark partition that wrote the row.
TASK_COLUMN = "_hw_task"
#: What each task yields: one row of its figures.
FIGURES = pa.schema([("rows", pa.int64()), ("rejected", pa.int64()), ("bytes", pa.int64())])


def quoted(name: str) -> str:
    """A double-quoted SQL identifier."""
    return '"' + name.replace('"', '""') + '"'


@dataclass(frozen=True)
class CopyTask:
    """What ``mapInArrow`` runs on each partition of a checkpoint's rows (pickled: plain values)."""

    settings: PostgresDestinationConfig
    #: ``"schema"."table"`` of the staging table.
    staging: str
    columns: tuple[Column, ...]

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        pending = _nonempty(batches)
        first = next(pending, None)
        figures = (0, 0, 0) if first is None else copy_rows(
            self.settings, self.staging, self.columns, first, pending)
        yield _figures(*figures)


@dataclass(frozen=True)
class StagingWriter:
    """The ``FileWriter`` of the destination: the reading task itself COPYs its batches.

    ``around(task)`` is what ``mapInArrow`` runs, so the rows go from the source's reader
    through the engine's typing straight into PostgreSQL in one Python worker, and only
    one row of figures per task goes back to the JVM: the rows never cross into it.
    (Measured: a second ``mapInArrow`` over the rows, Arrow out of the JVM and back in,
    cost more than the COPY itself.)  The staging table is named by the rows' own run and
    checkpoint (``_hw_run_id``, ``_hw_checkpoint``), which the driver created before the
    job ran (:func:`~headwater.destinations.postgres._owned.staging_name`).
    """

    settings: PostgresDestinationConfig
    #: ``"schema"."table"`` of the stream's table.
    target: str
    columns: tuple[Column, ...]

    @property
    def schema(self) -> pa.Schema:
        return FIGURES

    def around(self, task: ArrowTask) -> ArrowTask:
        writer = self

        def run(positions: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
            from headwater.destinations.postgres._owned import staging_name

            pending = _nonempty(task(positions))
            first = next(pending, None)
            if first is None:
                yield _figures(0, 0, 0)
                return
            staging = staging_name(writer.target, first.column("_hw_run_id")[0].as_py(),
                                   int(first.column("_hw_checkpoint")[0].as_py()))
            yield _figures(*copy_rows(writer.settings, staging, writer.columns, first,
                                      pending))

        return run


def _figures(rows: int, rejected: int, size: int) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({"rows": [rows], "rejected": [rejected],
                                       "bytes": [size]}, schema=FIGURES)


def copy_rows(settings: PostgresDestinationConfig, staging: str, columns: tuple[Column, ...],
              first: pa.RecordBatch, rest: Iterator[pa.RecordBatch]) -> tuple[int, int, int]:
    """COPY one Spark task's batches into ``staging`` in a transaction of the task's own."""
    from pyspark import TaskContext

    context = TaskContext.get()
    task = context.partitionId() if context is not None else 0
    return _Copy(settings, staging, columns)._copy(task, first, rest)


@dataclass(frozen=True)
class _Copy:
    settings: PostgresDestinationConfig
    staging: str
    columns: tuple[Column, ...]

    def _copy(self, task: int, first: pa.RecordBatch,
              rest: Iterator[pa.RecordBatch]) -> tuple[int, int, int]:
        from headwater.destinations.postgres._connect import connect

        names = ", ".join(quoted(c.name) for c in self.columns)
        rows = rejected = size = 0
        with connect(self.settings) as conn, conn.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtext(%s), %s)", [self.staging, task])
            cursor.execute(f"DELETE FROM {self.staging} WHERE {TASK_COLUMN} = %s", [task])
            statement = (f"COPY {self.staging} ({names}, {TASK_COLUMN}) "
                         "FROM STDIN (FORMAT BINARY)")
            with cursor.copy(statement) as copy:
                encoder = None
                for batch in _chain(first, rest):
                    fitted, noted = fit_batch(batch, list(self.columns))
                    fitted = fitted.append_column(
                        TASK_COLUMN, pa.array([task] * fitted.num_rows, pa.int32()))
                    if encoder is None:
                        encoder = _encoder(fitted.schema, self.columns)
                        copy.write(encoder.write_header())
                    data = encoder.write_batch(fitted)
                    copy.write(data)
                    rows, rejected, size = rows + batch.num_rows, rejected + noted, \
                        size + len(data)
                if encoder is not None:
                    copy.write(encoder.finish())
            conn.commit()
        return rows, rejected, size


def _nonempty(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    return (b for b in batches if b.num_rows)


def _chain(first: pa.RecordBatch, rest: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    yield first
    yield from rest


def _encoder(schema: pa.Schema, columns: tuple[Column, ...]) -> ArrowToPostgresBinaryEncoder:
    """pgpq's encoder of ``schema``: jsonb columns' text sent as jsonb (its version byte)."""
    from pgpq import ArrowToPostgresBinaryEncoder as Encoder
    from pgpq.encoders import StringEncoderBuilder
    from pgpq.schema import Jsonb

    builders = {f.name: Encoder.infer_encoder(f) for f in schema}
    for column in columns:
        if column.jsonb:
            builders[column.name] = StringEncoderBuilder.new_with_output(
                schema.field(column.name), Jsonb())
    return Encoder.new_with_encoders(schema, builders)


__all__ = ["FIGURES", "TASK_COLUMN", "CopyTask", "StagingWriter", "copy_rows", "quoted"]
