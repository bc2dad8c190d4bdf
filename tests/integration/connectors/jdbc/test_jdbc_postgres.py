"""The jdbc source against a real PostgreSQL, its driver from Maven Central (Ivy), on the
shared Spark session: the driver jar is added to that running session, as it would be to a
notebook's (``headwater/connectors/jdbc/_driver.py``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from headwater.config import load_connection
from headwater.engine import SyncEngine, SyncResult
from headwater.metadata_store import MetadataStore
from tests._postgres import PostgresServer
from tests.integration._connections import connection_file

pytestmark = pytest.mark.spark

DRIVER = "org.postgresql:postgresql:42.7.4"


@pytest.fixture
def database(postgres_server: PostgresServer) -> Iterator[str]:
    with postgres_server.database() as name:
        yield name


def execute(server: PostgresServer, database: str, statement: str) -> list[tuple[Any, ...]]:
    with psycopg.connect(server.database_url(database), autocommit=True) as conn:
        cur = conn.execute(statement)  # type: ignore[arg-type]
        return cur.fetchall() if cur.description else []


def config(server: PostgresServer, database: str, tables: list[dict[str, Any]],
           **extra: Any) -> dict[str, Any]:
    return {"url": f"jdbc:postgresql://{server.host}:{server.port}/{database}",
            "driver": DRIVER, "username": "headwater", "password": "headwater",
            "tables": tables, **extra}


def write_connection(tmp_path: Path, source: dict[str, Any], streams: list[dict[str, Any]],
                     per_checkpoint: int = 4) -> Path:
    return connection_file(tmp_path, name="jdbc", source_type="jdbc", source=source,
                           streams=streams,
                           checkpoint={"partitions_per_checkpoint": per_checkpoint})


def sync(path: Path) -> SyncResult:
    connection = load_connection(path)
    return SyncEngine(connection, MetadataStore(connection.metadata_store or "")).run()


def landed(spark: Any, tmp_path: Path, stream: str, columns: list[str]) -> Counter[Any]:
    rows = spark.read.format("delta").load(str(tmp_path / "lake" / stream)) \
        .select(*columns).toArrow().to_pylist()
    return Counter(tuple(r[c] for c in columns) for r in rows)


def test_full_refresh_cuts_a_skewed_key_at_quantiles(
        spark: Any, tmp_path: Path, postgres_server: PostgresServer, database: str) -> None:
    # 3,000 rows: ids 1..2000 dense, then 1,000 ids spread up to 10,000,000. Equal-width
    # strides (Spark's partitionColumn) would put 2,000 rows in the first of 3 partitions.
    execute(postgres_server, database, """
        CREATE TABLE items (id bigint PRIMARY KEY, label text, price numeric(10, 2));
        INSERT INTO items SELECT g, 'item ' || g, g * 1.25 FROM generate_series(1, 2000) g;
        INSERT INTO items SELECT 2000 + g * 9997, 'far ' || g, 1 FROM generate_series(1, 1000) g;
        CREATE TABLE notes (line text);
        INSERT INTO notes VALUES ('a'), ('b'), (NULL);""")
    source = config(postgres_server, database, [{"name": "items"}, {"name": "notes"}],
                    rows_per_partition=1000)
    path = write_connection(tmp_path, source, [
        {"name": "items", "sync_mode": "full_refresh", "destination_sync_mode": "overwrite"},
        {"name": "notes", "sync_mode": "full_refresh", "destination_sync_mode": "append"}])
    result = sync(path)
    assert result.status == "succeeded", result.to_dict()

    expected = Counter(execute(postgres_server, database, "SELECT id, label, price FROM items"))
    assert landed(spark, tmp_path, "items", ["id", "label", "price"]) == expected
    assert landed(spark, tmp_path, "notes", ["line"]) == Counter([("a",), ("b",), (None,)])
    sizes = Counter(r["_hw_partition_id"] for r in spark.read.format("delta").load(
        str(tmp_path / "lake" / "items")).select("_hw_partition_id").toArrow().to_pylist())
    assert len(sizes) == 3, sizes
    assert max(sizes.values()) - min(sizes.values()) <= 2, sizes  # 1000 each, not 2000/..
