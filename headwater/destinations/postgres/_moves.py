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
  two lanes upserting side by side take their row locks in one order.  With
  ``deletes: hard`` a ``DELETE`` of the keys whose winner is a delete comes first;
* history: ``_history.py``.
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
           keys: Sequence[str], cursor: str | None, partition_order: Sequence[str],
           deleted: str | None = None) -> int:
    """Merge the checkpoint's rows on ``keys``: the newest cursor wins, ties as in Delta.

    ``deleted`` names the delete flag column of ``deletes: hard``: a winning delete
    deletes its key's row (first, in the same transaction) and is not inserted.
    """
    names = ", ".join(quoted(c) for c in columns)
    key = ", ".join(quoted(k) for k in keys)
    latest = (f"SELECT DISTINCT ON ({key}) {names} FROM {staging} "
              f"ORDER BY {', '.join([key, *latest_first(cursor)])}")
    updates = ", ".join(f"{quoted(c)} = EXCLUDED.{quoted(c)}" for c in columns if c not in keys)
    parameters = {"partitions": list(partition_order)}
    deleted_rows = 0
    if deleted is not None:
        flag = f"coalesce(w.{quoted(deleted)}, false)"
        same = " AND ".join(f"t.{quoted(k)} IS NOT DISTINCT FROM w.{quoted(k)}" for k in keys)
        deleted_rows = conn.execute(
            f"DELETE FROM {target} AS t USING ({latest}) AS w "
            f"WHERE {same} AND {flag} AND ({beats(cursor, 'w')})", parameters).rowcount
        latest = (f"SELECT {names} FROM ({latest}) AS w "
                  f"WHERE NOT coalesce(w.{quoted(deleted)}, false)")
    statement = (f"INSERT INTO {target} AS t ({names}) {latest} "
                 f"ON CONFLICT ({key}) DO UPDATE SET {updates} WHERE {beats(cursor, 'EXCLUDED')}")
    return deleted_rows + conn.execute(statement, parameters).rowcount


def latest_first(cursor: str | None, alias: str = "") -> list[str]:
    """The merge rule's order of one key's rows, the winner first (``_merge_rule.py``);
    the partitions of the plan are the parameter ``partitions``; ``alias``: ``b.``."""
    return ([f"{alias}{quoted(cursor)} DESC NULLS LAST"] if cursor else []) + [
        f"{alias}_hw_checkpoint DESC",
        f"array_position(%(partitions)s::text[], {alias}_hw_partition_id) DESC NULLS FIRST",
        f"split_part({alias}_hw_raw_id, '-', -1)::bigint DESC"]


def beats(cursor: str | None, incoming: str) -> str:
    """SQL: the row ``incoming`` (an alias) replaces the table's row ``t`` of its key."""
    if not cursor:
        return f"{incoming}._hw_checkpoint >= t._hw_checkpoint"
    c = quoted(cursor)
    return (f"t.{c} IS NULL OR {incoming}.{c} > t.{c} OR "
            f"({incoming}.{c} = t.{c} AND {incoming}._hw_checkpoint >= t._hw_checkpoint)")


__all__ = ["beats", "delete_all", "delete_run", "insert", "latest_first", "upsert"]
