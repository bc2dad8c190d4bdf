"""The table's half of ``headwater verify``: count and checksum windows of a table with Spark.

The table is what its destination's ``read_table`` gives (Delta, Iceberg, PostgreSQL,
files, a third party's: one DataFrame of the columns compared); nothing here knows a
format.

Which rows are compared (the table's *current* rows, what the source's rows
now should have become):

* ``append_dedup``: the table's rows (one per key already), less deletes (a
  row whose ``_hw_deleted`` / ``_pg_deleted`` flag is true) and, in a history
  table, less the versions that are not current (``_hw_is_current``);
* ``append`` with a primary key: the latest version of each key, by the same
  rule ``append_dedup`` merges with (:mod:`headwater.destinations._merge_rule`),
  less deletes: an append table keeps every version it read, and a row updated
  since it was read lives in a later window at the source too;
* ``append`` without a key, and ``overwrite``: every row.

All windows of a stream are counted in one pass over the table: two aggregates
per window (a count and a checksum sum), so a row in two overlapping windows
counts in both.  The checksum is :mod:`headwater.key_checksum`'s, in Spark SQL.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from headwater.key_checksum import MODULUS
from headwater.sdk import RowWindow, WindowCount
from headwater.sync_modes import DestinationSyncMode

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

    from headwater.plan import ConfiguredStream

__all__ = ["DELETED_COLUMNS", "checksum_supported", "compared_columns", "current_rows", "key_hash",
           "table_counts"]

#: A row whose flag column of these names is true is a delete (the PostgreSQL CDC
#: source's tombstones, soft deletes of other sources).
DELETED_COLUMNS = ("_hw_deleted", "_pg_deleted")
#: History tables (SCD type 2) keep every version; this flag marks the current one.
CURRENT_COLUMN = "_hw_is_current"
#: What the merge rule orders a key's versions by after the cursor (``latest_rows``).
TIE_COLUMNS = ("_hw_checkpoint", "_hw_raw_id")


def compared_columns(configured: ConfiguredStream, windows: Sequence[RowWindow]) -> list[str]:
    """The columns :func:`current_rows` and :func:`table_counts` read (those a table
    lacks are left out by ``Destination.read_table``): the key, the cursor and the
    merge rule's tie columns, the windows' columns, and the delete and current flags."""
    columns = [*configured.primary_key]
    if configured.cursor_field:
        columns.append(configured.cursor_field)
    columns += [w.column for w in windows if w.column is not None]
    return [*columns, *TIE_COLUMNS, *DELETED_COLUMNS, CURRENT_COLUMN]


def current_rows(table: DataFrame, configured: ConfiguredStream) -> DataFrame:
    """The rows of ``table`` that stand for the source's rows now (see the module docs)."""
    from pyspark.sql import functions as F

    from headwater.destinations._merge_rule import latest_rows

    rows = table
    mode = configured.destination_sync_mode
    if CURRENT_COLUMN in rows.columns:
        rows = rows.where(F.col(CURRENT_COLUMN))
    if mode is DestinationSyncMode.APPEND and configured.primary_key:
        cursor = configured.cursor_field if configured.cursor_field in rows.columns else None
        rows = latest_rows(rows, configured.primary_key, cursor, ())
    if mode is not DestinationSyncMode.OVERWRITE:
        for flag in DELETED_COLUMNS:
            if flag in rows.columns:
                rows = rows.where(~F.coalesce(F.col(flag).cast("boolean"), F.lit(False)))
    return rows


def checksum_supported(table: DataFrame, key: Sequence[str]) -> bool:
    """Whether each key column has a canonical text in Spark (integers, strings, dates,
    booleans: :mod:`headwater.key_checksum`)."""
    from pyspark.sql.types import BooleanType, DateType, IntegralType, StringType

    types = {f.name: f.dataType for f in table.schema.fields}
    return bool(key) and all(
        isinstance(types.get(c), IntegralType | StringType | DateType | BooleanType)
        for c in key)


def key_hash(key: Sequence[str]) -> Column:
    """A key's 64-bit hash as ``decimal(20,0)``: MD5 of its canonical text, first 8 bytes."""
    from pyspark.sql import functions as F

    parts = []
    for name in key:
        text = F.col(_quoted(name)).cast("string")
        parts += [F.length(text).cast("string"), F.lit(":"), text]
    digest = F.md5(F.concat(*parts))  # null when a key column is null: adds nothing
    return F.conv(F.substring(digest, 1, 16), 16, 10).cast("decimal(20,0)")


def window_condition(window: RowWindow) -> Column:
    """The rows of ``window``, as a Spark condition."""
    from pyspark.sql import functions as F

    if window.column is None:
        return F.lit(True)
    column = F.col(_quoted(window.column))
    if window.null:
        return column.isNull()
    if window.values is not None:
        return column.isin(list(window.values))
    condition = F.lit(True)
    if window.low is not None:
        condition = condition & (column >= F.lit(window.low))
    if window.high is not None:
        condition = condition & (column < F.lit(window.high))
    return condition


def table_counts(rows: DataFrame, windows: Sequence[RowWindow],
                 key: Sequence[str] | None) -> list[WindowCount]:
    """Each window's rows of ``rows`` and (with ``key``) their keys' checksum, in one pass."""
    from pyspark.sql import functions as F

    if not windows:
        return []
    hashed = key_hash(key) if key else None
    aggregates = []
    for i, window in enumerate(windows):
        inside = window_condition(window)
        aggregates.append(F.sum(F.when(inside, 1).otherwise(0)).alias(f"n{i}"))
        if hashed is not None:
            aggregates.append(F.sum(F.when(inside, hashed)).alias(f"h{i}"))
    row = rows.agg(*aggregates).collect()[0]
    counts = []
    for i in range(len(windows)):
        checksum = None
        if hashed is not None:
            total = row[f"h{i}"]
            checksum = 0 if total is None else int(total) % MODULUS
        counts.append(WindowCount(int(row[f"n{i}"] or 0), checksum))
    return counts


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
