"""One MariaDB table into Arrow: connectorx (the mysql source's reader) against PyMySQL + Arrow.

Why it exists: issue 40 asks for a reader that decodes into Arrow without per-row Python
objects, chosen by measurement.  Both read the same ``SELECT`` (six columns: bigint, int,
double, varchar, datetime(6), a decimal as the server's text, as the source selects it)
from the server ``scripts/mariadb`` runs, in batches of 65,536 rows, in a fresh process
each (wall seconds, user CPU seconds, peak RSS), alternately ``--rounds`` times.

Run: ``.venv/bin/python bench/mysql_reader_clients.py [--rows 300000] [--rounds 2]``
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

REPO = Path(__file__).resolve().parents[1]
QUERY = "SELECT id, a, b, c, d, CAST(e AS CHAR) AS e FROM bench_rows"
BATCH = 65_536


def _read(client: str, url: str) -> None:
    """In a child process: read the table with ``client``, print its figures as JSON."""
    import pyarrow as pa

    started, rows = time.perf_counter(), 0
    if client == "connectorx":
        import connectorx as cx

        reader = cx.read_sql(url, QUERY, return_type="arrow_stream", batch_size=BATCH,
                             pre_execution_query=["SET time_zone = '+00:00'"])
        rows = sum(batch.num_rows for batch in reader)
    else:
        import pymysql
        import pymysql.cursors

        parts = urlsplit(url)
        conn = pymysql.connect(host=parts.hostname, port=parts.port, user=parts.username,
                               password=parts.password or "", database=parts.path[1:],
                               cursorclass=pymysql.cursors.SSCursor)
        cursor = conn.cursor()
        cursor.execute(QUERY)
        names = [d[0] for d in cursor.description]
        while chunk := cursor.fetchmany(BATCH):
            columns = [pa.array(list(c)) for c in zip(*chunk, strict=True)]
            batch = pa.RecordBatch.from_arrays(columns, names=names)
            rows += batch.num_rows
        conn.close()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"rows": rows, "seconds": time.perf_counter() - started,
                      "cpu": usage.ru_utime, "rss_mb": usage.ru_maxrss // 1024}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _read(*args.child)
        return
    server = subprocess.run([str(REPO / "scripts" / "mariadb"), "start"], check=True,
                            capture_output=True, text=True).stdout.strip().splitlines()[-1]
    import pymysql

    parts = urlsplit(server)
    admin = pymysql.connect(host=parts.hostname, port=parts.port, user=parts.username,
                            password=parts.password or "", database="headwater",
                            autocommit=True)
    with admin.cursor() as cursor:
        cursor.execute("DROP TABLE IF EXISTS bench_rows")
        cursor.execute("CREATE TABLE bench_rows (id BIGINT PRIMARY KEY, a INT, b DOUBLE, "
                       "c VARCHAR(40), d DATETIME(6), e DECIMAL(12, 2))")
        cursor.execute(f"INSERT INTO bench_rows SELECT seq, seq % 1000, seq * 1.5, "
                       f"CONCAT('row-', seq), '2024-01-01' + INTERVAL seq SECOND, seq / 7 "
                       f"FROM seq_1_to_{int(args.rows)}")
    admin.close()
    url = server.rsplit("/", 1)[0] + "/headwater"
    for _ in range(args.rounds):
        for client in ("connectorx", "pymysql"):
            out = subprocess.run([sys.executable, __file__, "--child", client, url],
                                 check=True, capture_output=True, text=True,
                                 env={**os.environ}).stdout
            figures = json.loads(out)
            print(f"{client:11} {figures['rows']:>9} rows  {figures['seconds']:6.2f} s  "
                  f"cpu {figures['cpu']:5.2f} s  peak rss {figures['rss_mb']} MB")


if __name__ == "__main__":
    main()
