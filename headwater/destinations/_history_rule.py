"""``history``'s one rule (slowly changing dimension type 2), shared by every Spark destination.

Why a module of its own: the Delta destination applies it with one ``MERGE`` and
the Iceberg destination by rewriting files (copy-on-write), and a table must not
depend on which wrote it; both take the rule from here, as ``append_dedup``
takes its rule from ``_merge_rule.py`` (the PostgreSQL destination says the same
rule in SQL, ``postgres/_history.py``).

A history table holds every version of a key, each with three columns:

* ``_hw_valid_from``: when the version began: the row's cursor where the cursor
  is a time (a timestamp or a date column: ``updated_at``), else the time the
  run was planned (``StreamPlan.planned_at``: a PostgreSQL CDC stream's
  ``_pg_lsn`` orders changes but dates none).  Both are fixed when the run is
  planned, so a checkpoint read again after a crash dates its versions alike;
* ``_hw_valid_to``: when the next version (or the key's delete) began; null
  while the version is current;
* ``_hw_is_current``: ``_hw_valid_to`` is null.

A checkpoint's rows are *events* of their keys, put in order by the cursor and
then by ``_merge_rule.latest_first``'s tie rule (checkpoint, partition in the
plan, record), earliest first.  Of the events of a key:

1. those not newer than the table's versions of the key are dropped: the cursor
   must be above the largest cursor stored for the key, and (a time cursor) the
   event must come after the key's last moment, its delete's included.  A
   checkpoint replayed, or read again by a ``backfill``, thus opens nothing
   twice, whatever its commit markers say; a late change is dropped, as an
   ``append_dedup`` table keeps its newer row;
2. events of one key with the same cursor are one moment: the last (by the tie
   rule) stands for it;
3. each remaining event that is not a delete (:mod:`._deletes`) opens a version,
   valid until the key's next event; a delete opens none;
4. the key's first remaining event closes the version current in the table
   (``_hw_valid_to`` = its time).

A stored version is never rewritten, only closed.  With a cursor that is not a
time, the versions of one key within one run all begin at the run's time: all
but the last are kept, valid for no instant (``[t, t)``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from functools import reduce
from typing import TYPE_CHECKING

import pyarrow as pa

from headwater.destinations._deletes import deleted_column
from headwater.destinations._merge_rule import earliest_first, quote

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame
    from pyspark.sql.types import DataType, StructType

VALID_FROM = "_hw_valid_from"
VALID_TO = "_hw_valid_to"
IS_CURRENT = "_hw_is_current"
#: The columns a history table has beyond the stream's, after its metadata columns.
HISTORY_FIELDS: list[pa.Field] = [
    pa.field(VALID_FROM, pa.timestamp("us", tz="UTC")),
    pa.field(VALID_TO, pa.timestamp("us", tz="UTC")),
    pa.field(IS_CURRENT, pa.bool_()),
]
HISTORY_NAMES = [f.name for f in HISTORY_FIELDS]

#: Columns of the key's stored facts (:func:`stored_facts`) and of its events.
_LAST_CURSOR, _CURRENT_FROM, _LAST_TIME = "_hw_last_cursor", "_hw_current_from", "_hw_last_time"
_TIME, _NEXT, _FIRST, _DELETED = "_hw_event_time", "_hw_next_time", "_hw_first", "_hw_deletes"
#: A closing row's copy of the version it closes: the table's columns, as stored.
WAS = "_hw_was"


def is_time(type_name: str) -> bool:
    """Whether a cursor column of Spark type ``type_name`` (``simpleString``) dates a version."""
    return type_name in ("timestamp", "timestamp_ntz", "date")


@dataclass(frozen=True)
class Changes:
    """What one checkpoint does to a history table: versions to add, versions to close.

    ``opened`` has the table's columns; ``closed`` the keys, ``_hw_valid_from``
    of the current version to close, and ``_hw_valid_to``: when it ends.
    """

    opened: DataFrame
    closed: DataFrame


def changes(batch: DataFrame, table: DataFrame | None, *, keys: Sequence[str],
            cursor: str | None, partition_order: Sequence[str], planned_at: str) -> Changes:
    """The versions ``batch`` (one checkpoint's rows) opens and the ones it closes in
    ``table`` (the history table's rows, or None while it has none), by the rule above."""
    from pyspark.sql import functions as F

    events = _events(batch, table, keys=keys, cursor=cursor, partition_order=partition_order,
                     planned_at=planned_at)
    opened = events.where(~F.col(_DELETED)).select(*_opened_columns(batch.columns))
    closed = events.where(_closes()).select(*_closed_columns(keys))
    return Changes(opened=opened, closed=closed)


def merge_rows(batch: DataFrame, table: DataFrame, *, keys: Sequence[str], cursor: str | None,
               partition_order: Sequence[str], planned_at: str, action: str,
               broadcast_keys: bool = False) -> DataFrame:
    """:func:`changes`' two sides as the rows of one frame, each with ``action``:
    ``open`` (a version to add: the batch's columns and the validity) or ``close``
    (the keys, ``_hw_valid_from`` of the current version to close, its
    ``_hw_valid_to``, and in ``_hw_was`` that version's stored columns; the batch's
    other columns null).

    Why not ``opened`` and ``closed`` unioned: both come from the same events, and a
    union plans (and runs) the events, the table's read and its facts once per side;
    here each event yields its rows in one pass (``explode`` of the two actions).
    Why the closed version's columns: a MERGE that sets every column of the row it
    updates from its source reads only the join's columns of the table's other rows;
    one that keeps a column reads every row of every touched file whole and shuffles
    it (the whole table, when changes are spread over the keys).
    """
    from pyspark.sql import functions as F

    events = _events(batch, table, keys=keys, cursor=cursor, partition_order=partition_order,
                     planned_at=planned_at, carried=table.columns, broadcast_keys=broadcast_keys)
    kind = F.col(action)
    is_close = kind == F.lit("close")
    key_set = set(keys)
    columns = [F.col(quote(c)) if c in key_set else
               F.when(~is_close, F.col(quote(c))).alias(c) for c in batch.columns]
    return (events.withColumn(action, F.explode(F.array(F.lit("open"), F.lit("close"))))
            .where(F.when(is_close, _closes()).otherwise(~F.col(_DELETED)))
            .select(*columns,
                    F.when(is_close, F.col(_CURRENT_FROM)).otherwise(F.col(_TIME))
                    .alias(VALID_FROM),
                    F.when(is_close, F.col(_TIME)).otherwise(F.col(_NEXT)).alias(VALID_TO),
                    (~is_close & F.col(_NEXT).isNull()).alias(IS_CURRENT),
                    F.when(is_close, F.col(WAS)).alias(WAS),
                    kind))


def _opened_columns(columns: Sequence[str]) -> list[Column]:
    """An opened version's columns: the batch's, then its validity."""
    from pyspark.sql import functions as F

    return [*[F.col(quote(c)) for c in columns], F.col(_TIME).alias(VALID_FROM),
            F.col(_NEXT).alias(VALID_TO), F.col(_NEXT).isNull().alias(IS_CURRENT)]


def _closed_columns(keys: Sequence[str]) -> list[Column]:
    """A closing row's columns: the keys, the current version's start, its end."""
    from pyspark.sql import functions as F

    return [*[F.col(quote(k)) for k in keys], F.col(_CURRENT_FROM).alias(VALID_FROM),
            F.col(_TIME).alias(VALID_TO)]


def _closes() -> Column:
    """The event closes the key's current version: its first, and one is current."""
    from pyspark.sql import functions as F

    return F.col(_FIRST) & F.col(_CURRENT_FROM).isNotNull()


def _events(batch: DataFrame, table: DataFrame | None, *, keys: Sequence[str],
            cursor: str | None, partition_order: Sequence[str], planned_at: str,
            carried: Sequence[str] = (), broadcast_keys: bool = False) -> DataFrame:
    """``batch``'s events that stand (rules 1 and 2), each with its time, the key's next
    time, whether it is the key's first, whether it deletes, and the key's current
    version's start (and, given ``carried``, its columns of those names in ``_hw_was``)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    clock = F.lit(datetime.fromisoformat(planned_at) if planned_at
                  else datetime.now(UTC)).cast("timestamp")
    timed = cursor is not None and is_time(batch.schema[cursor].dataType.simpleString())
    flag = deleted_column(batch.columns)
    key_cols = [F.col(quote(k)) for k in keys]
    # The batch's keys as they are: a semi-join needs no distinct keys, and making them
    # distinct (or spreading them, as the events are below) is a shuffle of its own.
    batch_keys = batch.select(*key_cols)
    group = _stand_ins(batch.schema, keys)
    if group is not None:  # each key's events in one partition, by the stand-ins
        batch = batch.withColumns(group).repartition(*[F.col(n) for n in group])
    by_key = [F.col(n) for n in group] if group is not None else key_cols
    events = batch.withColumn(
        _TIME, F.coalesce(F.col(quote(cursor)).cast("timestamp"), clock)
        if timed and cursor else clock)
    if table is not None:
        facts = stored_facts(table, batch_keys, keys, cursor, carried,
                             broadcast_keys=broadcast_keys, group=group)
        joined = list(group) if group is not None else list(keys)
        renamed = facts.select(
            *[F.col(quote(k)).alias(f"_hw_key_{i}") for i, k in enumerate(joined)],
            _LAST_CURSOR, _CURRENT_FROM, _LAST_TIME, *([WAS] if carried else []))
        on = _matching(keys) if group is None else reduce(
            lambda a, b: a & b, [F.col(n) == F.col(f"_hw_key_{i}") for i, n in enumerate(group)])
        events = events.join(renamed, on, "left").drop(
            *[f"_hw_key_{i}" for i in range(len(joined))])
        newer = F.lit(True)
        if cursor:
            newer = F.col(_LAST_CURSOR).isNull() | (F.col(quote(cursor)) > F.col(_LAST_CURSOR))
        if timed:
            newer = newer & (F.col(_LAST_TIME).isNull() | (F.col(_TIME) > F.col(_LAST_TIME)))
        else:  # the run's clock: never before the key's last moment
            events = events.withColumn(
                _TIME, F.coalesce(F.greatest(F.col(_TIME), F.col(_LAST_TIME)), F.col(_TIME)))
        events = events.where(newer)
    else:
        events = events.withColumn(_CURRENT_FROM, F.lit(None).cast("timestamp"))
    # One window over each key's events in the order they happened (the cursor, then
    # the tie rule): both steps below use it, so Spark shuffles and sorts them once.
    order = Window.partitionBy(*by_key).orderBy(
        *([F.col(quote(cursor)).asc_nulls_first()] if cursor else []),
        *earliest_first(partition_order))
    if cursor:  # one event per moment of a key: the last of its ties, which the next
        # event in this order does not share its cursor with
        column = F.col(quote(cursor))
        events = events.withColumn("_hw_tie", F.lead(F.struct(column)).over(order)).where(
            F.col("_hw_tie").isNull() | ~F.col("_hw_tie").getField(cursor).eqNullSafe(column)
        ).drop("_hw_tie")
    deleted = F.coalesce(F.col(quote(flag)), F.lit(False)) if flag else F.lit(False)
    return events.withColumns({_NEXT: F.lead(F.col(_TIME)).over(order),
                               _FIRST: F.row_number().over(order) == 1, _DELETED: deleted})


def stored_facts(table: DataFrame, batch_keys: DataFrame, keys: Sequence[str],
                 cursor: str | None, carried: Sequence[str] = (), *,
                 broadcast_keys: bool = False,
                 group: Mapping[str, Column] | None = None) -> DataFrame:
    """Per key of ``batch_keys`` that ``table`` holds: its largest stored cursor, the
    ``_hw_valid_from`` of its current version (null: none is current) and its last
    moment (the latest ``_hw_valid_from`` or ``_hw_valid_to``: a delete's time too);
    given ``carried``, the current version's columns of those names in ``_hw_was``.

    ``broadcast_keys``: the batch's keys are few enough to send to every task, so the
    table's rows are filtered where they are read instead of shuffled whole (with
    ``carried``, every column of every stored row) to meet the keys.
    ``group``: the keys' stand-ins (:func:`_stand_ins`), which the facts are then per
    (as columns of those names) instead of the keys.
    """
    from pyspark.sql import functions as F

    wanted = list(dict.fromkeys([*keys, *([cursor] if cursor else []), VALID_FROM, VALID_TO,
                                 IS_CURRENT, *carried]))
    rows = table.select(*[F.col(quote(c)) for c in wanted])
    renamed = batch_keys.select(*[F.col(quote(k)).alias(f"_hw_key_{i}")
                                  for i, k in enumerate(keys)])
    touched = rows.join(F.broadcast(renamed) if broadcast_keys else renamed, _matching(keys),
                        "left_semi")
    last = F.greatest(F.col(VALID_FROM), F.coalesce(F.col(VALID_TO), F.col(VALID_FROM)))
    # One version of a key is current at most, so the first non-null is it.
    was = ([F.first(F.when(F.col(IS_CURRENT), F.struct(*[F.col(quote(c)) for c in carried])),
                    ignorenulls=True).alias(WAS)] if carried else [])
    if group is not None:
        touched = touched.withColumns(dict(group))
    by = list(group) if group is not None else list(keys)
    return touched.groupBy(*[F.col(quote(k)) for k in by]).agg(
        (F.max(F.col(quote(cursor))) if cursor else F.lit(None)).alias(_LAST_CURSOR),
        F.max(F.when(F.col(IS_CURRENT), F.col(VALID_FROM))).alias(_CURRENT_FROM),
        F.max(last).alias(_LAST_TIME), *was)


def _stand_ins(schema: StructType, keys: Sequence[str]) -> dict[str, Column] | None:
    """Two never-null columns per key: its value with a null replaced by a constant of its
    type, and whether it was null; plain equality on them is ``<=>`` on the keys.  None
    when a key's type has no such constant here (the keys are then matched with ``<=>``).

    Why: Spark rewrites a ``<=>`` join into these very two expressions, but then
    partitions each side by them, while the windows and the stored facts' aggregate
    partition by the keys themselves: the events, the facts and the join's output (the
    closed versions' copies too) were each shuffled once more, about a fifth of a history
    checkpoint at 1,000,000 keys (``bench/RESULTS.md``).  As columns of their own, the
    repartition, the aggregate, the join and the windows all partition by the same
    columns, and each side is shuffled once.
    """
    from pyspark.sql import functions as F

    group: dict[str, Column] = {}
    for i, key in enumerate(keys):
        constant = _constant_of(schema[key].dataType)
        if constant is None:
            return None
        column = F.col(quote(key))
        group[f"_hw_group_{i}"] = F.coalesce(column, constant)
        group[f"_hw_group_{i}_null"] = column.isNull()
    return group


def _constant_of(data_type: DataType) -> Column | None:
    """A constant of ``data_type``, where it is an atomic type; None otherwise."""
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if isinstance(data_type, T.StringType):
        return F.lit("")
    if isinstance(data_type, T.NumericType):
        return F.lit(0).cast(data_type)
    if isinstance(data_type, T.BooleanType):
        return F.lit(False)
    if isinstance(data_type, T.DateType):
        return F.lit(date(1970, 1, 1))
    if isinstance(data_type, (T.TimestampType, T.TimestampNTZType)):
        return F.lit(datetime(1970, 1, 1)).cast(data_type)
    if isinstance(data_type, T.BinaryType):
        return F.lit(bytearray()).cast("binary")
    return None


def _matching(keys: Sequence[str]) -> Column:
    """The keys equal their ``_hw_key_<i>`` copies, a null key like any other (``<=>``)."""
    from pyspark.sql import functions as F

    return reduce(lambda a, b: a & b, [F.col(quote(k)).eqNullSafe(F.col(f"_hw_key_{i}"))
                                       for i, k in enumerate(keys)])


__all__ = ["HISTORY_FIELDS", "HISTORY_NAMES", "IS_CURRENT", "VALID_FROM", "VALID_TO",
           "WAS", "Changes", "changes", "is_time", "merge_rows", "stored_facts"]
