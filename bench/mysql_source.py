"""A MariaDB table -> Delta: Headwater's mysql source against Spark's JDBC reader and the dump.

Issue 40's benchmark, all in one run, on one table of mixed types (bigint key,
decimal(12,2), timestamp(6), JSON, varchar, tinyint(1)) in a MariaDB 10.11 that
``scripts/mariadb`` runs in a folder of the benchmark's own (``--server-dir``), so the
tests' server and its binary log are left alone (the rows are loaded with
``sql_log_bin = 0``, by ``INSERT ... SELECT`` from MariaDB's ``seq_1_to_N`` table):

* **dump** (the ceiling): ``mariadb-dump --single-transaction --quick`` of the table to
  /dev/null: the server's own export, one connection, no typing, no Spark.
* **Spark JDBC** (the baseline): ``spark.read.jdbc`` with ``numPartitions`` over the
  key's min/max (``partitionColumn=id``), ``fetchsize`` 10,000, MariaDB Connector/J from
  Maven Central (``spark.jars.packages``, Ivy, as the jdbc source fetches it), and the
  jdbc source's ``ANSI_QUOTES`` session (Spark has no dialect for ``jdbc:mariadb:``) ->
  ``write.format("delta")``.
* **Headwater**: ``SyncEngine.run()`` of a ``mysql`` source, full_refresh + overwrite,
  the same number of partitions (cut at the key's quantiles), one checkpoint.

Both syncs and the dump run ``--rounds`` times, the JDBC read and the sync in
alternating order (the machine is shared: a drift of its load falls on both), and the
medians are compared.

Memory: the peak of the Python workers (the executors' side, where the source reads and
the task writes) of Headwater syncs of a table of ``--small-rows`` rows (the first rows
of the big one) and of the big one, with the same partition count (partitions grow 5x)
and with the source's default ``rows_per_partition`` (500,000: more partitions of one
size), small first (Spark reuses its Python workers, and a worker that read a big
partition stays resident).  Memory is sampled from /proc every 0.2 s
(``_peak_memory.py``): the largest single Python worker, all workers at once, and the
whole process tree (driver, JVM, workers).  Last, the source's ``read()`` alone of every
partition in this process (connectorx into Arrow, no Spark): where the time goes.

Run: ``.venv/bin/python bench/mysql_source.py [--rows 5000000] [--small-rows 1000000]
[--partitions 8] [--rounds 2]``
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pymysql
import yaml
from _common import (
    REPO,
    dir_size,
    header,
    load_line,
    median,
    scratch_dir,
    table,
    timed_headwater_sync,
)
from _peak_memory import PeakMemory

os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)

MARIADB_JDBC = "org.mariadb.jdbc:mariadb-java-client:3.5.1"
COLUMNS = "id, amount, placed_at, payload, label, paid"
DDL = ("CREATE TABLE {name} (id BIGINT PRIMARY KEY, amount DECIMAL(12, 2), "
       "placed_at TIMESTAMP(6) NULL, payload JSON, label VARCHAR(40), paid TINYINT(1))")
ROWS = ("INSERT INTO {name} SELECT seq, (seq % 100000) / 100, "
        "TIMESTAMP'2024-01-01 00:00:00' + INTERVAL seq SECOND, "
        "JSON_OBJECT('sku', CONCAT('sku-', seq % 5000), 'qty', seq % 7, "
        "'tags', JSON_ARRAY('a', 'b')), CONCAT('order number ', seq), seq % 3 = 0 "
        "FROM seq_1_to_{rows}")


class Server:
    """The benchmark's MariaDB (``scripts/mariadb`` with a data folder of its own)."""

    def __init__(self, folder: Path) -> None:
        self.env = {**os.environ, "HEADWATER_MARIADB_DIR": str(folder)}
        self.was_running = self._script("status", check=False).returncode == 0
        url = self._script("start").stdout.strip().splitlines()[-1]
        parts = urlsplit(url)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 3306
        self.user, self.password = parts.username or "", parts.password or ""
        self.database = parts.path.lstrip("/")

    def _script(self, command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(REPO / "scripts" / "mariadb"), command], check=check,
                              capture_output=True, text=True, env=self.env)

    def stop_if_started(self) -> None:
        if not self.was_running:
            self._script("stop")

    def connect(self) -> Any:
        return pymysql.connect(host=self.host, port=self.port, user=self.user,
                               password=self.password, database=self.database,
                               autocommit=True)

    def source_config(self, partitions: int, rows: int) -> dict[str, Any]:
        return {"host": self.host, "port": self.port, "database": self.database,
                "username": self.user, "password": self.password,
                "rows_per_partition": -(-rows // partitions), "max_partitions": partitions}


def prepare(server: Server, name: str, rows: int, copy_from: str | None = None) -> None:
    """The table ``name`` of ``rows`` rows (kept between runs: made again only when its
    count differs), without a binary log of the load."""
    conn = server.connect()
    try:
        with conn.cursor() as cursor:
            cursor.execute("SELECT COUNT(*) FROM information_schema.TABLES WHERE "
                           "TABLE_SCHEMA = DATABASE() AND TABLE_NAME = %s", [name])
            if cursor.fetchone()[0]:
                cursor.execute(f"SELECT COUNT(*) FROM {name}")
                if cursor.fetchone()[0] == rows:
                    return
            cursor.execute("SET SESSION sql_log_bin = 0")
            cursor.execute(f"DROP TABLE IF EXISTS {name}")
            cursor.execute(DDL.format(name=name))
            if copy_from is not None:
                cursor.execute(f"INSERT INTO {name} SELECT * FROM {copy_from} WHERE id <= "
                               f"{int(rows)}")
            else:
                cursor.execute(ROWS.format(name=name, rows=int(rows)))
            cursor.execute(f"ANALYZE TABLE {name}")
    finally:
        conn.close()


def dump(server: Server, name: str) -> float:
    """Seconds of ``mariadb-dump`` of the table to /dev/null."""
    began = time.perf_counter()
    with open(os.devnull, "wb") as sink:
        subprocess.run(["mariadb-dump", "--no-defaults", f"--host={server.host}",
                        f"--port={server.port}", f"--user={server.user}",
                        f"--password={server.password}", "--single-transaction", "--quick",
                        "--no-create-info", "--skip-triggers", server.database, name],
                       check=True, stdout=sink)
    return time.perf_counter() - began


def spark_jdbc(spark: Any, server: Server, name: str, partitions: int, target: Path) -> float:
    """Seconds of Spark's JDBC reader over the key's min/max -> Delta."""
    url = f"jdbc:mariadb://{server.host}:{server.port}/{server.database}"
    props = {"user": server.user, "password": server.password,
             "driver": "org.mariadb.jdbc.Driver", "fetchsize": "10000",
             "sessionInitStatement": "SET SESSION sql_mode = "
                                     "CONCAT(@@SESSION.sql_mode, ',ANSI_QUOTES')"}
    conn = server.connect()
    try:
        with conn.cursor() as cursor:
            cursor.execute(f"SELECT MIN(id), MAX(id) FROM {name}")
            low, high = cursor.fetchone()
    finally:
        conn.close()
    began = time.perf_counter()
    frame = spark.read.jdbc(url, f"(SELECT {COLUMNS} FROM {name}) t", column="id",
                            lowerBound=int(low), upperBound=int(high) + 1,
                            numPartitions=partitions, properties=props)
    frame.write.format("delta").mode("overwrite").save(str(target))
    return time.perf_counter() - began


def headwater_sync(server: Server, name: str, rows: int, partitions: int, scratch: Path,
                   rows_per_partition: int | None = None) -> float:
    """Seconds of one Headwater sync of the table into ``scratch/lake``."""
    document = {
        "name": f"bench_mysql_{rows}",
        "source": {"type": "mysql", "config": {
            **server.source_config(partitions, rows), "tables": [name],
            **({"rows_per_partition": rows_per_partition} if rows_per_partition else {})}},
        "destination": {"type": "delta", "config": {"path": str(scratch / "lake")}},
        "streams": [{"name": name, "sync_mode": "full_refresh",
                     "destination_sync_mode": "overwrite"}],
        "metadata_store": f"sqlite:///{scratch / f'meta-{rows}.db'}",
        "checkpoint": {"partitions_per_checkpoint": partitions},
    }
    scratch.mkdir(parents=True, exist_ok=True)
    path = scratch / f"bench_mysql_{rows}.yaml"
    path.write_text(yaml.safe_dump(document))
    seconds, result = timed_headwater_sync(path)
    (stream,) = result.streams
    assert stream.records_written == rows, (stream.records_written, rows)
    return seconds


def read_only(server: Server, name: str, rows: int, partitions: int) -> float:
    """Seconds of the source's ``read()`` of every partition in this process, no Spark."""
    import pyarrow as pa

    from headwater.connectors.mysql import MySQLSource

    source = MySQLSource({**server.source_config(partitions, rows), "tables": [name]})
    (stream,) = source.streams()
    plan = stream.partitions(None)
    began = time.perf_counter()
    count = sum(b.num_rows for p in plan for b in stream.read(p)
                if isinstance(b, pa.RecordBatch))
    assert count == rows, (count, rows)
    return time.perf_counter() - began


def measured(action: Callable[[], Any]) -> tuple[Any, PeakMemory]:
    with PeakMemory() as memory:
        value = action()
    return value, memory


def gib(size: int) -> str:
    return f"{size / 2**30:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--small-rows", type=int, default=1_000_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--server-dir", default="/tmp/headwater-mariadb-bench")
    args = parser.parse_args()
    header("MariaDB table -> Delta: Headwater's mysql source vs Spark JDBC vs mariadb-dump",
           sys.argv)
    server = Server(Path(args.server_dir))
    try:
        run(server, args)
    finally:
        server.stop_if_started()


def run(server: Server, args: argparse.Namespace) -> None:
    big, small = f"bench_orders_{args.rows}", f"bench_orders_{args.small_rows}"
    began = time.perf_counter()
    prepare(server, big, args.rows)
    prepare(server, small, args.small_rows, copy_from=big)
    print(f"tables ready in {time.perf_counter() - began:.1f} s")

    from headwater.destinations.delta import DELTA_PACKAGE
    from headwater.engine import SparkSettings, get_spark

    spark: Any = get_spark(SparkSettings(
        master="local[*]", app_name="bench-mysql",
        conf={"spark.jars.packages": f"{DELTA_PACKAGE},{MARIADB_JDBC}"}))
    results: list[list[str]] = []
    memory_rows: list[list[str]] = []
    times: dict[str, list[float]] = {"dump": [], "jdbc": [], "headwater": []}

    def row(path: str, rows: int, seconds: float, memory: PeakMemory | None = None) -> None:
        results.append([path, f"{rows:,}", f"{seconds:.1f}", f"{rows / seconds:,.0f}",
                        gib(memory.peak) if memory else "-"])

    def sync(name: str, rows: int, partitions: int, per_partition: int, folder: str) -> float:
        """A Headwater sync measured: its seconds, and a line of the memory table."""
        seconds, memory = measured(lambda: headwater_sync(
            server, name, rows, partitions, scratch / folder, per_partition))
        memory_rows.append([f"{rows:,}", f"{partitions} x {-(-rows // partitions):,}",
                            gib(memory.worker_peak), gib(memory.workers_peak),
                            gib(memory.peak)])
        return float(seconds)

    with scratch_dir("hw-bench-mysql-") as scratch:
        # Warm-ups, so neither side pays for the JVM's first JDBC read or first sync.
        spark_jdbc(spark, server, small, args.partitions, scratch / "warm-jdbc")
        headwater_sync(server, small, args.small_rows, args.partitions, scratch / "warm")
        # Memory first on the small table (Spark reuses its Python workers: a worker that
        # read a big partition would still be resident during a later small sync).
        default = 500_000  # the mysql source's rows_per_partition
        sync(small, args.small_rows, args.partitions, -(-args.small_rows // args.partitions),
             "hw-small")
        sync(small, args.small_rows, -(-args.small_rows // default), default,
             "hw-small-default")
        for round_ in range(args.rounds):
            times["dump"].append(dump(server, big))
            row("mariadb-dump -> /dev/null", args.rows, times["dump"][-1])
            # Alternate which side goes first, so a drift of the machine's load is shared.
            for side in (("jdbc", "headwater") if round_ % 2 == 0 else ("headwater", "jdbc")):
                if side == "jdbc":
                    seconds, memory = measured(partial(
                        spark_jdbc, spark, server, big, args.partitions,
                        scratch / f"jdbc-{round_}"))
                    row("Spark JDBC -> Delta", args.rows, seconds, memory)
                else:
                    seconds = sync(big, args.rows, args.partitions,
                                   -(-args.rows // args.partitions), f"hw-big-{round_}")
                    row("Headwater -> Delta", args.rows, seconds)
                times[side].append(seconds)
        sync(big, args.rows, -(-args.rows // default), default, "hw-big-default")
        landed = spark.read.format("delta").load(str(scratch / "jdbc-0")).count()
        assert landed == args.rows, f"Spark JDBC landed {landed} rows, expected {args.rows}"
        sizes = dir_size(scratch / "jdbc-0"), dir_size(scratch / "hw-big-0" / "lake" / big)
    spark.stop()
    read_s, read_memory = measured(lambda: read_only(server, big, args.rows, args.partitions))
    row("source read() only, this process, no Spark", args.rows, read_s, read_memory)

    print(table(["path", "rows", "seconds", "rows/s", "process tree GiB"], results))
    print()
    print(table(["Headwater sync of rows", "partitions x rows", "largest Python worker GiB",
                 "all Python workers GiB", "process tree GiB"], memory_rows))
    hw_s, jdbc_s, dump_s = (median(times[k]) for k in ("headwater", "jdbc", "dump"))
    print(f"medians of {args.rounds}: Headwater {hw_s:.1f} s, Spark JDBC {jdbc_s:.1f} s, "
          f"mariadb-dump {dump_s:.1f} s")
    print(f"Headwater / Spark JDBC (rows/s): {jdbc_s / hw_s:.2f} (each round: "
          + ", ".join(f"{j / h:.2f}" for j, h in zip(times["jdbc"], times["headwater"],
                                                     strict=True)) + ")")
    print(f"Headwater / mariadb-dump (rows/s): {dump_s / hw_s:.2f}")
    print(f"Delta bytes: Spark JDBC {sizes[0] / 1e6:.0f} MB, Headwater {sizes[1] / 1e6:.0f} MB")
    print(f"end:     {load_line()}")


if __name__ == "__main__":
    main()
