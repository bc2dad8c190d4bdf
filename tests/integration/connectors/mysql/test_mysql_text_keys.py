"""A text primary key split into ranges on a real MariaDB, in its collation's order.

The keys (``_text_keys.py``) mix case, accents and shared prefixes, whose order under
``utf8mb4_unicode_ci`` and ``latin1_swedish_ci`` is neither Python's nor the bytes'.
Each table is planned and every partition read through the source itself (the
executors' code, no Spark).  The engine's full refresh of such a table is
``test_mysql_source.test_full_refresh_cuts_skewed_keys_at_quantiles``'s, in the same
sync as its integer keys (one sync's cost).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest

from headwater.connectors.mysql import MySQLSource
from tests._mariadb import MariaDBServer
from tests.integration.connectors.mysql._text_keys import create_keyed_table, text_keys
from tests.integration.connectors.mysql.test_mysql_source import execute

PARTITIONS = 6


@pytest.fixture
def database(mariadb_server: MariaDBServer) -> Iterator[str]:
    with mariadb_server.database() as name:
        yield name


@pytest.mark.parametrize("collation", ["utf8mb4_unicode_ci", "latin1_swedish_ci",
                                       "utf8mb4_bin"])
def test_a_text_key_splits_in_its_collations_order_and_each_row_is_read_once(
        mariadb_server: MariaDBServer, database: str, collation: str) -> None:
    keys = text_keys()
    create_keyed_table(mariadb_server, database, "words", collation, keys)
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
