"""Planning: split a table into key ranges cut at quantiles (full refresh) or cursor windows.

Runs on the driver with one short PyMySQL connection.  Every partition is a
half-open range ``[lo, hi)`` of one integer, text or date-time column, so two
partitions never share a row and together they cover the whole range: a row
whose value equals a cut belongs to the upper partition only.  The first and
last ranges are open-ended, so rows outside the values seen at plan time are
still read.

Full refresh cuts the single integer or text primary key (or a configured
column) at its **quantiles**, not between its min and max: one pass over the
key's index numbers the rows (``ROW_NUMBER() OVER (ORDER BY key)``) and takes the
key at every ``n / partitions``-th row (in a table of more than
:data:`EXACT_ROWS` rows, of a seeded random sample of about 2,000 keys per
partition, sorted by the server), so skewed keys (a few huge gaps, a dense
cluster) still give partitions of about the same number of rows.  A text key is
cut and compared in its collation's order, by the server (:mod:`._text_keys`).  The cuts are
values of the plan, persisted with the run: a resumed first load reads the same
partitions and starts at the first one not committed.

Incremental reads cut each gap of the cursor at its quantiles the same way; which
windows a sync reads (the tie rule and boundary keys) is
:mod:`headwater.connectors._cursor_windows`'s, shared with the postgres source.
"""

from __future__ import annotations

import itertools
from typing import Any

from headwater.connectors._cursor_windows import partition_count
from headwater.connectors.mysql._catalog import TableInfo
from headwater.connectors.mysql._sql import key_expression, literal, relation
from headwater.connectors.mysql._text_keys import server_ordered
from headwater.connectors.mysql._types import quote_ident
from headwater.sdk import StateConverter

__all__ = ["CursorQueries", "key_ranges", "quantile_cuts"]


def _rows(conn: Any, query: str) -> list[tuple[Any, ...]]:
    with conn.cursor() as cursor:
        cursor.execute(query)
        return list(cursor.fetchall())


#: Up to this many rows the cuts are exact (:func:`_numbered_cuts`); above, sampled
#: (:func:`_sampled_cuts`).  MariaDB numbers rows by materialising them in a temporary
#: table, on disk past 16 MB: 24 s for 5,000,000 bigint keys (bench/RESULTS.md).
EXACT_ROWS = 100_000
#: Keys sampled per partition above :data:`EXACT_ROWS`: a part's share of the rows is
#: then off by about ``1 / sqrt(2000)``, 2 %.
SAMPLE_PER_PARTITION = 2_000
#: The sample's seed: the same table gives the same plan (a plan is persisted anyway).
SAMPLE_SEED = 40


def quantile_cuts(conn: Any, table: TableInfo, column: str, where: str,
                  rows_per_partition: int, max_partitions: int) -> list[Any]:
    """The values of ``column`` cutting the rows matching ``where`` into parts of about
    equal size (distinct, in the server's order of the column: its collation's for
    text; none when one part is enough)."""
    rows = int(_rows(conn, f"SELECT COUNT(*) FROM {relation(table)} WHERE {where}")[0][0])
    count = partition_count(rows, rows_per_partition, max_partitions)
    if count <= 1:
        return []
    if rows <= EXACT_ROWS:
        return _numbered_cuts(conn, table, column, where, rows, count)
    return _sampled_cuts(conn, table, column, where, min(1.0, SAMPLE_PER_PARTITION * count
                                                         / rows), count)


def _numbered_cuts(conn: Any, table: TableInfo, column: str, where: str, rows: int,
                   count: int) -> list[Any]:
    """The key at every ``rows / count``-th row: one pass numbering the rows in order."""
    ident = quote_ident(column)
    positions = sorted({rows * i // count + 1 for i in range(1, count)})
    numbered = (f"SELECT {ident} AS v, ROW_NUMBER() OVER (ORDER BY {ident}) AS rn "
                f"FROM {relation(table)} WHERE {where}")
    found = _rows(conn, f"SELECT v FROM ({numbered}) numbered WHERE rn IN "
                        f"({', '.join(str(p) for p in positions)}) ORDER BY rn")
    return server_ordered(r[0] for r in found)


def _sampled_cuts(conn: Any, table: TableInfo, column: str, where: str, fraction: float,
                  count: int) -> list[Any]:
    """The quantiles of a random sample of the keys (about ``fraction`` of the rows),
    sorted by the server: one pass over the key, no temporary table of every row."""
    ident = quote_ident(column)
    sample = [r[0] for r in _rows(conn, f"SELECT {ident} FROM {relation(table)} WHERE "
                                        f"({where}) AND RAND({SAMPLE_SEED}) < {fraction!r} "
                                        f"ORDER BY {ident}")]
    if not sample:
        return []
    return server_ordered(sample[len(sample) * i // count] for i in range(1, count))


def key_ranges(conn: Any, table: TableInfo, column: str | None, rows_per_partition: int,
               max_partitions: int) -> list[dict[str, Any]]:
    """Params of full-refresh partitions: ``{}`` (whole table) or ``{column, lo, hi}``."""
    if column is None:
        return [{}]
    cuts = quantile_cuts(conn, table, column, f"{quote_ident(column)} IS NOT NULL",
                         rows_per_partition, max_partitions)
    bounds: list[int | str | None] = [
        None, *(c if isinstance(c, str) else int(c) for c in cuts), None]
    return [{"column": column, "lo": a, "hi": b} for a, b in itertools.pairwise(bounds)]


class CursorQueries:
    """:class:`headwater.connectors._cursor_windows.WindowQueries` in MySQL."""

    def __init__(self, conn: Any, table: TableInfo, column: str, converter: StateConverter,
                 rows_per_partition: int, max_partitions: int, keys_limit: int) -> None:
        self.conn, self.table, self.column, self.converter = conn, table, column, converter
        self.rows_per_partition, self.max_partitions = rows_per_partition, max_partitions
        self.keys_limit = keys_limit

    def top_value(self) -> Any:
        ident = quote_ident(self.column)
        return _rows(self.conn, f"SELECT MAX({ident}) FROM {relation(self.table)}")[0][0]

    def keys_at(self, value: Any) -> list[str] | None:
        limit = self.keys_limit
        if not self.table.primary_key:
            return None
        key = key_expression(self.table.primary_key)
        found = _rows(self.conn, f"SELECT {key} FROM {relation(self.table)} WHERE "
                                 f"{quote_ident(self.column)} = "
                                 f"{literal(self.converter.parse(value))} "
                                 f"ORDER BY 1 LIMIT {int(limit) + 1}")
        if len(found) > limit:
            return None
        return [str(r[0]) for r in found]

    def cut(self, low: Any, high: Any) -> list[tuple[Any, Any]]:
        converter, ident = self.converter, quote_ident(self.column)
        lo_value, hi_value = converter.parse(low), converter.parse(high)
        where = f"{ident} >= {literal(lo_value)} AND {ident} < {literal(hi_value)}"
        cuts = quantile_cuts(self.conn, self.table, self.column, where,
                             self.rows_per_partition, self.max_partitions)
        values = sorted({v for v in (converter.parse_record_value(c) for c in cuts)
                         if lo_value < v < hi_value})
        bounds = [low, *(converter.serialize(v) for v in values), high]
        return list(itertools.pairwise(bounds))
