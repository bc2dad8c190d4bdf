"""``history`` in PostgreSQL: one statement closes and opens a checkpoint's versions.

The rule is ``_history_rule.py``'s (the Spark destinations'), said in SQL so it
runs inside the commit's transaction beside the marker: the checkpoint's staged
rows are events of their keys; those newer than the key's stored versions (its
largest cursor, and with a time cursor its last moment, a delete's included)
are kept, one per moment (the last of a cursor's ties), in cursor order; each
that is not a delete opens a version valid until the key's next event, and the
key's first closes its current version.  The ``UPDATE`` that closes runs as a
data-modifying ``WITH`` beside the ``INSERT`` that opens: one statement, one
snapshot, so neither sees the other's rows.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from headwater.destinations._history_rule import IS_CURRENT, VALID_FROM, VALID_TO
from headwater.destinations.postgres._copy import quoted
from headwater.destinations.postgres._moves import latest_first

#: PostgreSQL types (``format_type`` text) of a cursor that dates a version, and how a
#: value of each becomes a ``timestamptz`` (``{}``: the column), naive ones read as UTC.
_TIMES = {"timestamp with time zone": "{}",
          "timestamp without time zone": "({} AT TIME ZONE 'UTC')",
          "date": "({}::timestamp AT TIME ZONE 'UTC')"}


def apply(conn: psycopg.Connection[Any], target: str, staging: str, columns: Sequence[str],
          keys: Sequence[str], cursor: str | None, cursor_type: str | None,
          deleted: str | None, partition_order: Sequence[str], planned_at: str) -> int:
    """Apply the staged checkpoint to the history table ``target``; the rows it changed."""
    names = ", ".join(quoted(c) for c in columns)
    key = ", ".join(quoted(k) for k in keys)
    c = quoted(cursor) if cursor else None
    timed = cursor_type in _TIMES and c is not None
    clock = "coalesce(%(planned_at)s::timestamptz, now())"
    time = (f"coalesce({_TIMES[cursor_type or ''].format('b.' + c)}, {clock})"
            if timed and c else clock)
    same = " AND ".join(f"{{a}}.{quoted(k)} IS NOT DISTINCT FROM {{b}}.{quoted(k)}"
                        for k in keys)
    f, to, cur = quoted(VALID_FROM), quoted(VALID_TO), quoted(IS_CURRENT)
    newer = [f"(f._hw_last_cursor IS NULL OR b.{c} > f._hw_last_cursor)"] if c else []
    if timed:
        newer.append(f"(f._hw_last_time IS NULL OR {time} > f._hw_last_time)")
        at = time
    else:  # the run's clock: never before the key's last moment
        at = f"greatest({time}, f._hw_last_time)"
    moment = f"DISTINCT ON ({', '.join(f'b.{quoted(k)}' for k in keys)}, b.{c}) " if c else ""
    tie_order = ", ".join([*(f"b.{quoted(k)}" for k in keys), *([f"b.{c}"] if c else []),
                           *latest_first(None, "b.")])
    ascending = ", ".join([*([f"{c} ASC NULLS FIRST"] if c else []), "_hw_checkpoint",
                           "array_position(%(partitions)s::text[], _hw_partition_id) "
                           "NULLS LAST", "split_part(_hw_raw_id, '-', -1)::bigint"])
    flag = f"coalesce(o.{quoted(deleted)}, false)" if deleted else "false"
    statement = f"""
        WITH facts AS (
            SELECT {', '.join(f't.{quoted(k)}' for k in keys)},
                   {f'max(t.{c})' if c else 'NULL'} AS _hw_last_cursor,
                   max(t.{f}) FILTER (WHERE t.{cur}) AS _hw_current_from,
                   max(greatest(t.{f}, t.{to})) AS _hw_last_time
            FROM {target} AS t
            WHERE EXISTS (SELECT 1 FROM {staging} AS s WHERE {same.format(a='t', b='s')})
            GROUP BY {', '.join(f't.{quoted(k)}' for k in keys)}
        ), events AS (
            SELECT {moment}{', '.join(f'b.{quoted(n)}' for n in columns)},
                   {at} AS _hw_at, f._hw_current_from
            FROM {staging} AS b LEFT JOIN facts AS f ON {same.format(a='f', b='b')}
            WHERE {' AND '.join(newer) or 'true'}
            ORDER BY {tie_order}
        ), ordered AS (
            SELECT e.*, lead(_hw_at) OVER w AS _hw_next, row_number() OVER w AS _hw_n
            FROM events AS e WINDOW w AS (PARTITION BY {key} ORDER BY {ascending})
        ), closed AS (
            UPDATE {target} AS t SET {to} = o._hw_at, {cur} = false
            FROM ordered AS o
            WHERE o._hw_n = 1 AND o._hw_current_from IS NOT NULL
              AND {same.format(a='t', b='o')} AND t.{cur} AND t.{f} = o._hw_current_from
            RETURNING 1
        )
        INSERT INTO {target} ({names}, {f}, {to}, {cur})
        SELECT {', '.join(f'o.{quoted(n)}' for n in columns)}, o._hw_at, o._hw_next,
               o._hw_next IS NULL
        FROM ordered AS o WHERE NOT {flag}
    """
    return conn.execute(statement, {"partitions": list(partition_order),
                                    "planned_at": planned_at or None}).rowcount


__all__ = ["apply"]
