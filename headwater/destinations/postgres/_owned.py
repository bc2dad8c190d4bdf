"""What Headwater keeps in the destination database besides the streams' tables.

* ``_headwater.commit_markers``: one row per landed checkpoint (``kind`` commit),
  per staged overwrite checkpoint (``staged``) and per published overwrite
  (``publish``), keyed by the table and the marker's ``app_id``/``version``,
  with its tag (run, stream, checkpoint, partition states) and figures.  A
  commit's row is inserted in the very transaction that moves its rows into the
  table, so the row is the proof that they landed: ``find_commit`` reads it,
  never the metadata store (which a restore from backup may have sent back).
* ``_headwater.staging``: which staging table belongs to which table, lane
  (``app_id``), checkpoint (``version``) and run, so a run's staging can be
  dropped without guessing from names.
* schema ``_headwater_staging``: the UNLOGGED staging tables themselves (not
  WAL-logged: fast to fill, emptied by a server crash, which ``find_staged``
  notices by their row count).

Created on first use under an advisory lock, since streams prepare side by side.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import psycopg

from headwater.destinations._base import tagged_partition_states

OWN_SCHEMA = "_headwater"
STAGING_SCHEMA = "_headwater_staging"
MARKERS = f"{OWN_SCHEMA}.commit_markers"
STAGING = f"{OWN_SCHEMA}.staging"
#: ``pg_advisory_xact_lock`` key serialising the creation of the objects above.
_DDL_LOCK = 0x68770037

COMMIT, STAGED, PUBLISH = "commit", "staged", "publish"

_DDL = [
    f"CREATE SCHEMA IF NOT EXISTS {OWN_SCHEMA}",
    f"CREATE SCHEMA IF NOT EXISTS {STAGING_SCHEMA}",
    f"""CREATE TABLE IF NOT EXISTS {MARKERS} (
        target text NOT NULL, app_id text NOT NULL, version bigint NOT NULL, kind text NOT NULL,
        run_id text NOT NULL, stream text NOT NULL, checkpoint bigint, tag text NOT NULL,
        rows bigint NOT NULL, rejected bigint NOT NULL, bytes bigint NOT NULL,
        txid bigint NOT NULL DEFAULT txid_current(),
        committed_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (target, app_id, version, kind))""",
    f"""CREATE TABLE IF NOT EXISTS {STAGING} (
        name text PRIMARY KEY, target text NOT NULL, app_id text NOT NULL,
        version bigint NOT NULL, run_id text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now())""",
]


def ensure(conn: psycopg.Connection[Any]) -> None:
    """Create the schemas and tables above when missing (in the caller's transaction)."""
    exists = conn.execute("SELECT to_regclass(%s) IS NOT NULL AND to_regclass(%s) IS NOT NULL "
                          "AND to_regnamespace(%s) IS NOT NULL",
                          [MARKERS, STAGING, STAGING_SCHEMA]).fetchone()
    if exists and exists[0]:
        return
    conn.execute("SELECT pg_advisory_xact_lock(%s)", [_DDL_LOCK])
    for statement in _DDL:
        conn.execute(statement)


def staging_name(target: str, run_id: str, checkpoint: int) -> str:
    """``_headwater_staging."s_<digest>_<checkpoint>"``: one per table, run and checkpoint.

    The checkpoint's index is its marker's version; the run stands for the lane's app id
    because an executor knows it from the rows themselves (``_hw_run_id``,
    ``_hw_checkpoint``), and the tasks name the table they COPY into.
    """
    digest = hashlib.sha256(f"{target}\0{run_id}".encode()).hexdigest()[:24]
    return f'{STAGING_SCHEMA}."s_{digest}_{checkpoint}"'


@dataclass(frozen=True)
class Marker:
    """A row of the marker table."""

    run_id: str
    checkpoint: int | None
    tag: str
    rows: int
    rejected: int
    bytes: int
    #: The transaction that inserted it (and moved the checkpoint's rows).
    txid: int

    @property
    def partition_states(self) -> dict[str, Any]:
        return tagged_partition_states(self.tag)


def find(conn: psycopg.Connection[Any], target: str, app_id: str, version: int,
         kind: str) -> Marker | None:
    row = conn.execute(
        f"SELECT run_id, checkpoint, tag, rows, rejected, bytes, txid FROM {MARKERS} "
        "WHERE target = %s AND app_id = %s AND version = %s AND kind = %s",
        [target, app_id, version, kind]).fetchone()
    return None if row is None else Marker(*row)


def insert(conn: psycopg.Connection[Any], target: str, kind: str, *, app_id: str, version: int,
           run_id: str, stream: str, checkpoint: int | None, tag: str,
           figures: tuple[int, int, int]) -> int:
    """Insert a marker; the id of the transaction it is part of."""
    row = conn.execute(
        f"INSERT INTO {MARKERS} (target, app_id, version, kind, run_id, stream, checkpoint, "
        "tag, rows, rejected, bytes) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
        "RETURNING txid", [target, app_id, version, kind, run_id, stream, checkpoint, tag,
                           *figures]).fetchone()
    return int(row[0]) if row else 0


def register_staging(conn: psycopg.Connection[Any], name: str, target: str, app_id: str,
                     version: int, run_id: str) -> None:
    conn.execute(f"INSERT INTO {STAGING} (name, target, app_id, version, run_id) "
                 "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (name) DO UPDATE SET "
                 "run_id = EXCLUDED.run_id, created_at = now()",
                 [name, target, app_id, version, run_id])


def drop_staging(conn: psycopg.Connection[Any], name: str) -> None:
    conn.execute(f"DROP TABLE IF EXISTS {name}")
    conn.execute(f"DELETE FROM {STAGING} WHERE name = %s", [name])


def staging_of(conn: psycopg.Connection[Any], target: str, *,
               other_than_run: str | None = None) -> list[tuple[str, str, int, str]]:
    """The table's staging tables: (name, app id, version, run id), except ``other_than_run``'s."""
    rows = conn.execute(f"SELECT name, app_id, version, run_id FROM {STAGING} WHERE target = %s "
                        "AND run_id IS DISTINCT FROM %s ORDER BY name",
                        [target, other_than_run]).fetchall()
    return [(str(n), str(a), int(v), str(r)) for n, a, v, r in rows]


def lane_versions(conn: psycopg.Connection[Any], target: str, prefix: str) -> dict[str, int]:
    """Each app id of ``prefix`` with a commit or publish on the table, and its latest version."""
    like = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    rows = conn.execute(f"SELECT app_id, max(version) FROM {MARKERS} WHERE target = %s AND "
                        "kind <> %s AND app_id LIKE %s GROUP BY app_id",
                        [target, STAGED, like]).fetchall()
    return {str(a): int(v) for a, v in rows}


__all__ = ["COMMIT", "MARKERS", "OWN_SCHEMA", "PUBLISH", "STAGED", "STAGING_SCHEMA", "Marker",
           "drop_staging", "ensure", "find", "insert", "lane_versions", "register_staging",
           "staging_name", "staging_of"]
