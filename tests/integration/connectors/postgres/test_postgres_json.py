"""PostgreSQL json/jsonb: text by default, VARIANT with ``json_as: variant``.

A real PostgreSQL server, real Spark, real Delta tables.
"""

from __future__ import annotations

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


@pytest.fixture
def database(postgres_server: PostgresServer) -> Iterator[str]:
    with postgres_server.database() as name:
        with psycopg.connect(postgres_server.database_url(name), autocommit=True) as conn:
            conn.execute("CREATE TABLE docs (id int PRIMARY KEY, updated int NOT NULL, "
                         "body jsonb, raw json)")
            conn.execute("""INSERT INTO docs VALUES
                (1, 1, '{"b": 1.50, "a": {"x": [1, "two"]}}', '{"z": 1,  "y": 2}'),
                (2, 1, '[1, 2]', '"text"'),
                (3, 1, NULL, 'null')""")
        yield name


def _sync(tmp_path: Path, server: PostgresServer, database: str, **source: Any) -> SyncResult:
    path = connection_file(
        tmp_path, name="pg", source_type="postgres",
        source=server.source_config(database, cursor_fields={"docs": "updated"}, **source),
        streams=[{"name": "docs", "sync_mode": "incremental",
                  "destination_sync_mode": "append_dedup", "primary_key": ["id"]}])
    config = load_connection(path)
    result = SyncEngine(config, MetadataStore(config.metadata_store or "")).run()
    assert result.status == "succeeded", result.to_dict()
    return result


def test_jsonb_lands_as_variant_when_asked(spark: Any, tmp_path: Path,
                                          postgres_server: PostgresServer,
                                          database: str) -> None:
    result = _sync(tmp_path, postgres_server, database, json_as="variant")
    assert result.streams[0].records_rejected == 0
    table = spark.read.format("delta").load(str(tmp_path / "lake" / "docs"))
    assert table.schema["body"].dataType.simpleString() == "variant"
    assert table.schema["raw"].dataType.simpleString() == "variant"
    got = {r["id"]: r.asDict() for r in table.selectExpr(
        "id", "variant_get(body, '$.b', 'decimal(4,2)') AS b", "body:a.x[1]::string AS x",
        "variant_get(body, '$[1]', 'int') AS second", "raw:y::int AS y",
        "variant_get(raw, '$', 'string') AS text", "body IS NULL AS no_body").collect()}
    assert str(got[1]["b"]) == "1.50" and got[1]["x"] == "two" and got[1]["y"] == 2
    assert got[2]["second"] == 2 and got[2]["text"] == "text"
    assert got[3]["no_body"] is True


def test_jsonb_stays_text_by_default(spark: Any, tmp_path: Path,
                                     postgres_server: PostgresServer, database: str) -> None:
    _sync(tmp_path, postgres_server, database)
    table = spark.read.format("delta").load(str(tmp_path / "lake" / "docs"))
    assert table.schema["body"].dataType.simpleString() == "string"
    raw = {r["id"]: r["raw"] for r in table.select("id", "raw").collect()}
    assert raw[1] == '{"z": 1,  "y": 2}'  # json keeps PostgreSQL's text as it is
