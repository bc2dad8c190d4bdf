"""Planning: partition bounds Headwater computes itself, asking the database through Spark.

Spark's JDBC reader can split a table on ``partitionColumn`` between a lower and
an upper bound, in equal-width strides: on a skewed column most rows land in a
few partitions.  Headwater cuts at **quantiles** instead, computed by the
database: ``NTILE(n) OVER (ORDER BY c)`` (a window function of SQL:2003, which
PostgreSQL, MySQL 8, MariaDB 10.2+, SQL Server, Oracle, DB2 and Snowflake
have), the smallest value of each tile a cut; a database that refuses it gets
equal-width cuts between ``MIN`` and ``MAX``.  Each partition is one half-open
range of one column, its bounds in its params (so its id is stable and a
resumed run reads exactly it again), and becomes one ``predicates`` entry of
Spark's reader.

Every planning question is a small query through Spark's JDBC reader (its
``query`` option), collected on the driver: a count, a handful of cuts, the top
cursor value, the keys at it.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from headwater.connectors._cursor_windows import partition_count
from headwater.connectors.jdbc._catalog import TableInfo
from headwater.connectors.jdbc._config import JdbcConfig
from headwater.connectors.jdbc._driver import reader
from headwater.connectors.jdbc._sql import Dialect
from headwater.sdk import StateConverter

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["JdbcWindowQueries", "key_ranges", "query_rows"]

log = logging.getLogger(__name__)


def query_rows(spark: SparkSession, settings: JdbcConfig, sql: str) -> list[tuple[Any, ...]]:
    """The rows of one small planning query, through Spark's JDBC reader (Arrow: a
    ``timestamp`` comes back as an aware UTC datetime, whatever this process's zone)."""
    table = reader(spark, settings).option("query", sql).load().toArrow()
    columns = [table.column(i).to_pylist() for i in range(table.num_columns)]
    return list(zip(*columns, strict=True))


@dataclass(frozen=True)
class Cutter:
    """Counts and quantile cuts of one column of one relation, under a condition."""

    spark: SparkSession
    settings: JdbcConfig
    table: TableInfo
    column: str

    @property
    def dialect(self) -> Dialect:
        return Dialect(self.settings.url)

    def count(self, where: str) -> int:
        rows = query_rows(self.spark, self.settings,
                          f"SELECT COUNT(*) AS hw_n FROM {self.table.relation} WHERE {where}")
        return int(rows[0][0]) if rows else 0

    def cuts(self, where: str, parts: int) -> list[Any]:
        """About ``parts - 1`` values cutting the rows under ``where`` into equal counts."""
        if parts <= 1:
            return []
        name = self.dialect.name(self.column)
        relation = self.table.relation
        try:
            rows = query_rows(self.spark, self.settings, (
                f"SELECT MIN(hw_v) AS hw_cut FROM (SELECT {name} AS hw_v, NTILE({parts}) OVER "
                f"(ORDER BY {name}) AS hw_tile FROM {relation} WHERE {where} AND {name} IS NOT "
                "NULL) hw_tiles GROUP BY hw_tile"))
            return sorted(v for (v,) in rows if v is not None)[1:]
        except Exception as exc:
            log.info("NTILE refused (%s); cutting %s between its MIN and MAX", exc, self.column)
        rows = query_rows(self.spark, self.settings,
                          f"SELECT MIN({name}) AS hw_lo, MAX({name}) AS hw_hi FROM {relation} "
                          f"WHERE {where}")
        low, high = rows[0] if rows else (None, None)
        if low is None or high is None or low == high:
            return []
        width = (high - low) / parts
        if isinstance(low, int):
            return sorted({low + round(width * i) for i in range(1, parts)} - {low})
        return [low + width * i for i in range(1, parts)]


def stored(value: Any) -> Any:
    """A bound as JSON: an integer as it is, a timestamp as UTC ISO 8601 text."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return value.astimezone(dt.UTC).isoformat()
    if hasattr(value, "as_integer_ratio") and not isinstance(value, float):
        return int(value)  # a DECIMAL(p, 0) key
    return value


def parsed(value: Any) -> Any:
    """The value a stored bound stands for (None stays None: an open end)."""
    if isinstance(value, str):
        return dt.datetime.fromisoformat(value)
    return value


def key_ranges(spark: SparkSession, settings: JdbcConfig, table: TableInfo,
               column: str | None) -> list[dict[str, Any]]:
    """Params of full-refresh partitions: ``{}`` (whole table) or ``{column, lo, hi}``,
    the outer two open-ended (the first also holds the column's NULLs)."""
    if column is None:
        return [{}]
    cutter = Cutter(spark, settings, table, column)
    rows = cutter.count("1 = 1")
    cuts = [stored(c) for c in cutter.cuts("1 = 1", partition_count(
        rows, settings.rows_per_partition, settings.max_partitions))]
    if not cuts:
        return [{}]
    bounds: list[Any] = [None, *cuts, None]
    return [{"column": column, "lo": a, "hi": b} for a, b in itertools.pairwise(bounds)]


def range_predicate(dialect: Dialect, params: dict[str, Any]) -> str:
    """The ``WHERE`` text of a key range (``1 = 1``: the whole table)."""
    column = params.get("column")
    if not column:
        return "1 = 1"
    condition = dialect.range(column, parsed(params["lo"]), parsed(params["hi"]))
    if params["lo"] is None:
        condition = f"({condition} OR {dialect.name(column)} IS NULL)"
    return condition


def key_literal_values(keys: list[str]) -> list[Any]:
    """Keys as kept in state (JSON text of one value) -> the values to write as literals."""
    return [json.loads(key) for key in keys]


@dataclass(frozen=True)
class JdbcWindowQueries:
    """The tie rule's questions (:class:`~headwater.connectors._cursor_windows.WindowQueries`)
    in SQL Spark's JDBC reader runs."""

    cutter: Cutter
    converter: StateConverter
    #: The single key column the boundary keys are read from (None: no usable key).
    key: str | None
    keys_limit: int

    def top_value(self) -> Any:
        name = self.cutter.dialect.name(self.cutter.column)
        rows = query_rows(self.cutter.spark, self.cutter.settings,
                          f"SELECT MAX({name}) AS hw_top FROM {self.cutter.table.relation}")
        return rows[0][0] if rows else None

    def keys_at(self, value: Any) -> list[str] | None:
        if self.key is None:
            return None
        dialect = self.cutter.dialect
        at = (f"{dialect.name(self.cutter.column)} = "
              f"{dialect.literal(self._value(value))}")
        if self.cutter.count(at) > self.keys_limit:
            return None
        rows = query_rows(self.cutter.spark, self.cutter.settings,
                          f"SELECT {dialect.name(self.key)} AS hw_key FROM "
                          f"{self.cutter.table.relation} WHERE {at}")
        return sorted(json.dumps(stored(k)) for (k,) in rows)

    def cut(self, low: Any, high: Any) -> list[tuple[Any, Any]]:
        where = self.cutter.dialect.range(self.cutter.column, self._value(low),
                                          self._value(high))
        settings = self.cutter.settings
        parts = partition_count(self.cutter.count(where), settings.rows_per_partition,
                                settings.max_partitions)
        lo, hi = self.converter.parse(low), self.converter.parse(high)
        cuts = sorted({c for c in (self.converter.parse_record_value(v)
                                   for v in self.cutter.cuts(where, parts)) if lo < c < hi})
        bounds = [low, *(self.converter.serialize(c) for c in cuts), high]
        return list(itertools.pairwise(bounds))

    def _value(self, stored_value: Any) -> Any:
        return self.converter.parse(stored_value)
