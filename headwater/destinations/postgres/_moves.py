"""The SQL that moves a checkpoint's staged rows into its table, one statement set per mode.

Each runs inside the driver's commit transaction, beside the marker's insert:

* append: ``INSERT ... SELECT`` from staging;
* overwrite of one checkpoint, and a staged overwrite's publish: ``DELETE`` every
  row, then insert (``DELETE``, not ``TRUNCATE``: a reader's snapshot keeps the
  old rows until the commit, where ``TRUNCATE`` is not MVCC-safe);
* replay: delete the replayed run's rows, then insert;
* append_dedup: one row per key of the checkpoint first (``DISTINCT ON`` in the
  merge rule's order: latest cursor, then checkpoint, partition in the plan,
  record number; ``_merge_rule.py``), then ``INSERT ... ON CONFLICT DO UPDATE
  ... WHERE`` the incoming row wins by the same rule.  Rows go in key order, so
  two lanes upserting side by side take their row locks in one order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from headwater.destinations.postgres._copy import quoted


def insert(conn: psycopg.Connection[Any], target: str, staging: str,
           columns: Sequence[str]) -> int:
    names = ", ".join(quoted(c) for c in columns)
    return conn.execute(f"INSERT INTO {target} ({names}) SELECT {names} FROM {staging}").rowcount


def delete_all(conn: psycopg.Connection[Any], target: str) -> None:
    conn.execute(f"DELETE FROM {target}")


def delete_run(conn: psycopg.Connection[Any], target: str, run_id: str) -> int:
    return conn.execute(f"DELETE FROM {target} WHERE _hw_run_id = %s", [run_id]).rowcount


def upsert(conn: psycopg.Connection[Any], target: str, staging: str, columns: Sequence[str],
           keys: Sequence[str], cursor: str | None, partition_order: Sequence[str]) -> int:
    """Merge the checkpoint's rows on ``keys``: the newest cursor wins, ties as in Delta."""
    names = ", ".join(quoted(c) for c in columns)
    key = ", ".join(quoted(k) for k in keys)
    order = [key]
    if cursor:
        order.append(f"{quoted(cursor)} DESC NULLS LAST")
    order += ["_hw_checkpoint DESC",
              "array_position(%(partitions)s::text[], _hw_partition_id) DESC NULLS FIRST",
              "split_part(_hw_raw_id, '-', -1)::bigint DESC"]
    updates = ", ".join(f"{quoted(c)} = EXCLUDED.{quoted(c)}" for c in columns if c not in keys)
    if cursor:
        c = quoted(cursor)
        newer = (f"t.{c} IS NULL OR EXCLUDED.{c} > t.{c} OR "
                 f"(EXCLUDED.{c} = t.{c} AND EXCLUDED._hw_checkpoint >= t._hw_checkpoint)")
    else:
        newer = "EXCLUDED._hw_checkpoint >= t._hw_checkpoint"
    statement = (f"INSERT INTO {target} AS t ({names}) "
                 f"SELECT DISTINCT ON ({key}) {names} FROM {staging} ORDER BY {', '.join(order)} "
                 f"ON CONFLICT ({key}) DO UPDATE SET {updates} WHERE {newer}")
    return conn.execute(statement, {"partitions": list(partition_order)}).rowcount


__all__ = ["delete_all", "delete_run", "insert", "upsert"]
