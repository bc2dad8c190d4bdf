"""A text primary key split into ranges on a real MariaDB, in its collation's order.

The keys mix case, accents and shared prefixes, so Python's order (code points:
``B`` before ``a``, ``é`` after ``z``) and a byte-wise comparison both disagree with
``utf8mb4_unicode_ci`` and ``latin1_swedish_ci`` (where ``ä`` and ``ö`` follow
``z``): cut or compared by either, a range would miss rows or read some twice.
Each table is planned and every partition read through the source itself (the
executors' code, no Spark); one table is also synced into Delta by the engine.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from headwater.connectors.mysql import MySQLSource
from tests._mariadb import MariaDBServer
from tests.integration.connectors.mysql.test_mysql_source import (
    execute,
    landed,
    sync,
    write_connection,
)

pytestmark = pytest.mark.spark

#: Bases distinct once lower-cased and stripped of accents (so the keys are distinct
#: under every collation below), many sharing prefixes (``ab``, ``ab0``, ``ab0a``...).
STEMS = ("a", "ab", "ab0", "abc", "b", "c", "e", "ec", "ecz", "o", "oe", "z", "z0")
TAILS = ("", "0", "1", "a", "ab", "b", "c", "e", "ea", "o", "z", "za", "zz", "0a", "00")
#: Letters a key may carry in another case or with an accent; no letter here equals
#: another under these collations (no y/ü, no ß, no æ).
ACCENTS = {"a": "aAäÄá", "e": "eEéÉè", "o": "oOöÖ", "b": "bB", "c": "cC", "z": "zZ"}
PARTITIONS = 6


def text_keys() -> list[str]:
    rng = random.Random(40)
    bases = sorted({stem + tail for stem in STEMS for tail in TAILS})
    return ["".join(rng.choice(ACCENTS.get(ch, ch)) for ch in base) for base in bases]


@pytest.fixture
def database(mariadb_server: MariaDBServer) -> Iterator[str]:
    with mariadb_server.database() as name:
        yield name


def create(server: MariaDBServer, database: str, table: str, collation: str,
           keys: list[str]) -> None:
    charset = collation.split("_", 1)[0]
    connection = server.connect(database)
    try:
        with connection.cursor() as cursor:
            cursor.execute(f"CREATE TABLE {table} (id VARCHAR(20) PRIMARY KEY, n INT) "
                           f"CHARACTER SET {charset} COLLATE {collation}")
            cursor.executemany(f"INSERT INTO {table} VALUES (%s, %s)",
                               [(k, i) for i, k in enumerate(keys)])
    finally:
        connection.close()


@pytest.mark.parametrize("collation", ["utf8mb4_unicode_ci", "latin1_swedish_ci",
                                       "utf8mb4_bin"])
def test_a_text_key_splits_in_its_collations_order_and_each_row_is_read_once(
        mariadb_server: MariaDBServer, database: str, collation: str) -> None:
    keys = text_keys()
    create(mariadb_server, database, "words", collation, keys)
    config = mariadb_server.source_config(database, rows_per_partition=-(-len(keys)
                                                                         // PARTITIONS))
    (stream,) = MySQLSource(config).streams()
    plan = stream.partitions(None)
    assert len(plan) == PARTITIONS, [p.id for p in plan]
    read: list[list[str]] = []
    for partition in plan:
        batches = [b for b in stream.read(partition) if isinstance(b, pa.RecordBatch)]
        read.append([k for b in batches for k in b.column("id").to_pylist()])
    sizes = [len(part) for part in read]
    assert max(sizes) - min(sizes) <= 1, sizes  # the cuts are the key's quantiles
    assert Counter(k for part in read for k in part) == Counter(keys)  # each row once
    # The ranges follow the server's order: each partition's keys, in ORDER BY id, come
    # right after the previous partition's.
    in_order = [k for (k,) in execute(mariadb_server, database,
                                      "SELECT id FROM words ORDER BY id")]
    position = {k: i for i, k in enumerate(in_order)}
    spans = [sorted(position[k] for k in part) for part in read]
    assert [i for span in spans for i in span] == list(range(len(keys)))


def test_a_text_key_full_refresh_lands_every_row_once(
        spark: Any, tmp_path: Path, mariadb_server: MariaDBServer, database: str) -> None:
    keys = text_keys()
    create(mariadb_server, database, "words", "utf8mb4_unicode_ci", keys)
    path = write_connection(tmp_path, mariadb_server, database,
                            [{"name": "words", "sync_mode": "full_refresh",
                              "destination_sync_mode": "overwrite"}],
                            rows_per_partition=-(-len(keys) // PARTITIONS))
    result = sync(path)
    assert [s.records_written for s in result.streams] == [len(keys)]
    assert landed(spark, tmp_path, "words", ["id", "n"]) == Counter(
        (k, i) for i, k in enumerate(keys))
    sizes = Counter(p for (p,) in landed(spark, tmp_path, "words", ["_hw_partition_id"])
                    .elements())
    assert len(sizes) == PARTITIONS, sizes
    assert max(sizes.values()) - min(sizes.values()) <= 1, sizes


@pytest.mark.parametrize("key", [
    # Mixed case: Python puts every K... before every k...; the collation orders by number.
    ("VARCHAR(20)", "CONCAT(IF(seq % 2, 'k', 'K'), IF(seq % 3, 'é', 'E'), LPAD(seq, 7, '0'))"),
    # Skewed: a dense run, then keys spread up to about 2^62.
    ("BIGINT", "IF(seq <= 100000, seq, seq * 38430716820228)"),
], ids=["text", "bigint"])
def test_a_table_past_the_exact_limit_is_cut_at_a_samples_quantiles(
        mariadb_server: MariaDBServer, database: str, key: tuple[str, str]) -> None:
    from headwater.connectors.mysql._partitioning import EXACT_ROWS

    rows, parts = EXACT_ROWS + 20_000, 4
    execute(mariadb_server, database,
            f"CREATE TABLE big (id {key[0]} PRIMARY KEY) COLLATE utf8mb4_unicode_ci",
            f"INSERT INTO big SELECT {key[1]} FROM seq_1_to_{rows}")
    config = mariadb_server.source_config(database, rows_per_partition=-(-rows // parts))
    (stream,) = MySQLSource(config).streams()
    plan = stream.partitions(None)
    assert len(plan) == parts, [p.id for p in plan]
    read = [[k for b in stream.read(p) if isinstance(b, pa.RecordBatch)
             for k in b.column("id").to_pylist()] for p in plan]
    sizes = [len(part) for part in read]
    assert all(abs(size - rows / parts) < 0.1 * rows / parts for size in sizes), sizes
    assert sum(sizes) == rows and len({k for part in read for k in part}) == rows
    # The cuts cost one pass over the key's index: no temporary table of every row
    # (numbering them with ROW_NUMBER took one: 24 s for 5,000,000 keys, on disk).
    assert temporary_tables(config, stream.table) == 0


def temporary_tables(config: dict[str, Any], table: Any) -> int:
    """Temporary tables the server made for one planning of ``table``'s key ranges, on the
    planning's own connection (``Created_tmp_tables``, less what ``SHOW STATUS`` makes)."""
    from headwater.connectors.mysql._config import MySQLConfig
    from headwater.connectors.mysql._errors import connect
    from headwater.connectors.mysql._partitioning import key_ranges

    settings = MySQLConfig(**config)
    conn = connect(settings)

    def created() -> int:
        with conn.cursor() as cursor:
            cursor.execute("SHOW SESSION STATUS LIKE 'Created_tmp_tables'")
            return int(cursor.fetchone()[1])

    try:
        first = created()
        showing = created() - first
        before = created()
        key_ranges(conn, table, "id", settings.rows_per_partition, settings.max_partitions)
        return created() - before - showing
    finally:
        conn.close()
