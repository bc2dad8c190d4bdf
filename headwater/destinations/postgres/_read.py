"""A stream's table as a Spark DataFrame, read by the tasks with ADBC (``read_table``).

Why ADBC on the executors, not Spark's JDBC reader: the session carries no JDBC
driver for this destination (it needs none to write), and ADBC's PostgreSQL driver
runs a query without parameters as a binary COPY decoded straight into Arrow, which
the PostgreSQL source measured faster than JDBC and psycopg (bench/RESULTS.md,
"PostgreSQL source").  The rows never pass through the driver.

How the table is split without knowing its keys: by its pages.  The driver asks the
table's size in pages and gives each task a range of them (``ctid >= '(lo,0)' AND
ctid < '(hi,0)'``, a TID range scan: PostgreSQL 14 and later); the last range is open
above, so pages added after the split are read too.  Each task reads in one
``REPEATABLE READ, READ ONLY`` transaction of its own: a table being written while it
is read may be seen at different moments by different tasks (verify is meant for a
table no sync is writing).

Columns are typed as the destination types them (``TableColumn.arrow_field``): what
ADBC returns is cast to it (a ``numeric`` comes as text), jsonb and json are read as
their text, and a column of a type Arrow cannot name as null.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa

from headwater.destinations._read_frames import parallelism, present, work_items
from headwater.destinations.postgres._config import PostgresDestinationConfig
from headwater.destinations.postgres._connect import connect, explain
from headwater.destinations.postgres._copy import quoted
from headwater.destinations.postgres._tables import columns_of, qualified
from headwater.errors import DestinationError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["read_frame"]

#: ADBC's batch size hint: a task holds about this much of its range at a time.
BATCH_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class _ReadPages:
    """What each task runs: the rows of its page ranges, as ``schema``.  Plain values only."""

    settings: PostgresDestinationConfig
    #: The SELECT list and table, without the page condition.
    select: str
    schema: pa.Schema

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            for low, high in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist(),
                                 strict=True):
                yield from self._read(int(low), None if high is None else int(high))

    def _read(self, low: int, high: int | None) -> Iterator[pa.RecordBatch]:
        import adbc_driver_postgresql.dbapi as adbc
        from psycopg.conninfo import make_conninfo

        # Page numbers are integers made here: safe in the text of a COPY, which binds none.
        where = f" WHERE ctid >= '({low},0)'::tid"
        if high is not None:
            where += f" AND ctid < '({high},0)'::tid"
        conn = adbc.connect(make_conninfo(**self.settings.kwargs()))
        try:
            cur = conn.cursor()
            cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            cur.execute("SET LOCAL TimeZone = 'UTC'")
            cur.adbc_statement.set_options(
                **{"adbc.postgresql.batch_size_hint_bytes": str(BATCH_BYTES)})
            cur.execute(self.select + where)
            for piece in cur.fetch_record_batch():
                yield pa.RecordBatch.from_arrays(
                    [piece.column(i).cast(f.type) for i, f in enumerate(self.schema)],
                    schema=self.schema)
            cur.close()
        finally:
            conn.rollback()
            conn.close()


def read_frame(spark: SparkSession, settings: PostgresDestinationConfig, stream: str,
               columns: Sequence[str] | None) -> DataFrame:
    """The table's rows, ``columns`` of them (those it has), one task per page range."""
    from pyspark.sql.pandas.types import from_arrow_schema

    try:
        with connect(settings, autocommit=True, stream=stream) as conn:
            table = columns_of(conn, settings.schema_name, stream)
            row = conn.execute(
                "SELECT pg_relation_size(to_regclass(%s)) "
                "/ current_setting('block_size')::bigint",
                [qualified(settings.schema_name, stream)]).fetchone()
    except Exception as exc:
        raise explain(exc, settings, stream=stream) from exc
    if not table:
        raise DestinationError(f"PostgreSQL table {settings.schema_name}.{stream} does not "
                               "exist", stream=stream)
    kinds = {c.name: c.arrow_field() for c in table}
    fields = [kinds[c] for c in present(list(kinds), columns)]
    if not fields:
        raise DestinationError(f"PostgreSQL table {settings.schema_name}.{stream} has none "
                               f"of the columns {', '.join(columns or ())}", stream=stream)
    schema = pa.schema([pa.field(f.name, f.type) for f in fields])
    select = "SELECT {} FROM {}".format(", ".join(_selected(f) for f in fields),
                                        qualified(settings.schema_name, stream))
    ranges = work_items(spark, _page_ranges(int(row[0] or 0) if row else 0,
                                            parallelism(spark)), "low bigint, high bigint")
    return ranges.mapInArrow(_ReadPages(settings, select, schema), from_arrow_schema(schema))


def _selected(field: pa.Field) -> str:
    """A column as ADBC should read it: jsonb/json as text, a type Arrow has none of as null."""
    name = quoted(field.name)
    if pa.types.is_null(field.type):
        return f"NULL AS {name}"
    if pa.types.is_string(field.type) or pa.types.is_large_string(field.type):
        return f"{name}::text AS {name}"
    return name


def _page_ranges(pages: int, tasks: int) -> list[tuple[int, int | None]]:
    """``tasks`` ranges of about equal pages (fewer for a small table), the last open above."""
    slices = max(1, min(pages, tasks))
    step = -(-max(pages, 1) // slices)
    return [(i * step, None if i == slices - 1 else (i + 1) * step) for i in range(slices)]
