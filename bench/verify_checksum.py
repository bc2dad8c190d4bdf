"""The key checksum of ``headwater verify``: in SQL, or the keys fetched and hashed in Python?

One PostgreSQL table of ``--rows`` rows (``bigint`` id, ``text`` name) in the server
``scripts/postgres`` runs.  Timed, best of ``--rounds``: ``count(*)`` alone;
``count(*)`` with the checksum of ``id`` and of ``(id, name)`` in SQL
(:func:`headwater.connectors.postgres._window_count.key_checksum_sql`, what the
postgres source's ``count_window`` runs); and ``SELECT id`` fetched by psycopg and
hashed by :func:`headwater.key_checksum.key_checksum` (the alternative).  Both
checksums are checked equal.

Run: ``.venv/bin/python bench/verify_checksum.py [--rows 1000000] [--rounds 3]``
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import psycopg
from _common import REPO, header, load_line, run_with_postgres, table
from psycopg import sql

from headwater.connectors.postgres._window_count import key_checksum_sql
from headwater.key_checksum import key_checksum


def _best(rounds: int, work: Callable[[], Any]) -> tuple[float, Any]:
    best, value = float("inf"), None
    for _ in range(rounds):
        started = time.perf_counter()
        value = work()
        best = min(best, time.perf_counter() - started)
    return best, value


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    header("verify: the key checksum in PostgreSQL against Python", sys.argv)
    url = subprocess.run([str(REPO / "scripts" / "postgres"), "start"], check=True,
                         capture_output=True, text=True).stdout.strip().splitlines()[-1]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS bench_verify")
        conn.execute("CREATE TABLE bench_verify AS SELECT g::bigint AS id, 'name ' || g AS "
                     "name FROM generate_series(1, %s) g", [args.rows])
        conn.execute("VACUUM ANALYZE bench_verify")

        def query(statement: sql.Composed) -> Callable[[], Any]:
            return lambda: conn.execute(statement).fetchone()

        rows, sums = [], {}
        statements: list[tuple[str, sql.Composed]] = [
                ("count(*)", sql.SQL("SELECT count(*) FROM {}").format(
                    sql.Identifier("bench_verify"))),
                ("count(*) + checksum(id), SQL", sql.SQL("SELECT count(*), {} FROM bench_verify")
                 .format(key_checksum_sql(("id",)))),
                ("count(*) + checksum(id, name), SQL", sql.SQL(
                    "SELECT count(*), {} FROM bench_verify").format(
                    key_checksum_sql(("id", "name"))))]
        for label, statement in statements:
            seconds, value = _best(args.rounds, query(statement))
            rows.append((label, f"{seconds:.3f}", f"{args.rows / seconds:,.0f}"))
            sums[label] = value
        seconds, in_python = _best(args.rounds, lambda: key_checksum(
            conn.execute("SELECT id FROM bench_verify").fetchall()))
        rows.append(("ids fetched + checksum(id), Python", f"{seconds:.3f}",
                     f"{args.rows / seconds:,.0f}"))
        conn.execute("DROP TABLE bench_verify")
    assert int(sums["count(*) + checksum(id), SQL"][1]) == in_python
    print(table(["what", "s", "keys/s"], rows))
    print(f"\nend:     {load_line()}")


if __name__ == "__main__":
    run_with_postgres(main)
