"""The SDK's conformance kit (``headwater.sdk.testing``) against every built-in source, each
on a real server or store started for the test: it holds them to the contract a connector
author's source is held to, and a kit that passes everything would show nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest

from headwater.connectors import _BUILT_INS, get_source_class
from headwater.sdk import Partition, Source, Stream
from headwater.sdk.testing import assert_conformant, run_conformance
from tests.api_server import TOKEN, ApiData, ApiServer
from tests.integration.connectors.rest._rest import BUDGET, END_1, connection

CHECKED: set[str] = set()


def _conformant(type_name: str, config: dict[str, Any], **options: Any) -> None:
    report = assert_conformant(get_source_class(type_name), config, **options)
    assert report.checks and not report.failures
    CHECKED.add(type_name)


def test_sample() -> None:
    _conformant("sample", {"users": 250, "orders": 120, "rows_per_partition": 100})


@pytest.fixture
def api() -> Iterator[ApiServer]:
    server = ApiServer(ApiData.sample(surveys=12, issues=20)).start()
    yield server
    server.stop()


def test_rest(api: ApiServer, tmp_path: Path) -> None:
    import yaml

    path = connection(tmp_path, api, "surveys.yaml", end=END_1)
    config = yaml.safe_load(path.read_text())["source"]["config"]
    assert config["auth"] == {"type": "bearer", "token": TOKEN}
    assert config["rate_limit"] == {"budgets": [BUDGET]}
    _conformant("rest", config)


def test_object_storage(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    for part in range(3):
        rows = [{"id": part * 10 + i, "name": f"n{i}", "amount": i * 1.5} for i in range(10)]
        (folder / f"{part:03}.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    _conformant("object_storage", {"url": str(folder), "streams": [
        {"name": "events", "globs": ["*.jsonl"]}]})


def test_postgres(postgres_server: Any) -> None:
    with postgres_server.database() as database:
        with psycopg.connect(postgres_server.database_url(database), autocommit=True) as conn:
            conn.execute("CREATE TABLE items (id integer PRIMARY KEY, name text, "
                         "updated_at timestamptz NOT NULL)")
            conn.execute("INSERT INTO items SELECT g, 'item ' || g, "
                         "timestamptz '2024-01-01' + g * interval '1 hour' "
                         "FROM generate_series(1, 500) g")
        _conformant("postgres", postgres_server.source_config(
            database, rows_per_partition=100, cursor_fields={"items": "updated_at"}))


def test_mysql(mariadb_server: Any) -> None:
    with mariadb_server.database() as database:
        mariadb_server.execute("CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(20), "
                               "updated_at DATETIME(6) NOT NULL)", database)
        mariadb_server.execute(
            "INSERT INTO items SELECT seq, CONCAT('item ', seq), "
            "TIMESTAMP '2024-01-01 00:00:00' + INTERVAL seq HOUR FROM seq_1_to_500", database)
        _conformant("mysql", mariadb_server.source_config(
            database, tables=["items"], rows_per_partition=100,
            cursor_fields={"items": "updated_at"}))


@pytest.mark.spark
def test_jdbc(postgres_server: Any) -> None:
    """Its rows come from Spark's JDBC reader (``Stream.spark_frame``): the kit reads them
    through the running session, as the engine does."""
    from tests.integration.connectors.jdbc.test_jdbc_postgres import config

    with postgres_server.database() as database:
        with psycopg.connect(postgres_server.database_url(database), autocommit=True) as conn:
            conn.execute("CREATE TABLE items (id integer PRIMARY KEY, name text, "
                         "updated_at timestamptz NOT NULL)")
            conn.execute("INSERT INTO items SELECT g, 'item ' || g, "
                         "timestamptz '2024-01-01' + g * interval '1 hour' "
                         "FROM generate_series(1, 500) g")
        _conformant("jdbc", config(postgres_server, database,
                                   [{"name": "items", "cursor_field": "updated_at"}],
                                   rows_per_partition=100))


def test_airbyte() -> None:
    faker = {"package": "airbyte-source-faker", "version": "7.2.1",
             "config": {"count": 60, "seed": 3, "records_per_slice": 20, "parallelism": 1,
                        "always_updated": False}}
    _conformant("airbyte", faker, streams=["users"])


def test_kafka(kafka_broker: Any) -> None:
    from tests.integration.connectors.kafka.test_kafka_source import _produce, _topic

    topic = _topic(kafka_broker, "kit")
    _produce(kafka_broker, topic, range(0, 60))
    _conformant("kafka", {"bootstrap_servers": kafka_broker.bootstrap, "topics": [topic],
                          "max_records_per_partition": 10})


def test_every_built_in_source_was_checked() -> None:
    # Runs last in this module (pytest keeps file order): a new built-in needs a test here.
    assert set(_BUILT_INS) <= CHECKED, f"not checked: {sorted(set(_BUILT_INS) - CHECKED)}"


class _Unpicklable(Stream):
    name = "broken"
    json_schema_ = {"type": "object", "properties": {"id": {"type": "integer"}}}
    primary_key = ("missing",)

    def __init__(self) -> None:
        self.handle = open(__file__)  # noqa: SIM115 (a file object does not pickle)

    def json_schema(self) -> dict[str, Any]:
        return self.json_schema_

    def partitions(self, state: Any) -> list[Partition]:
        return [Partition("broken", "p0", {"n": 3})]

    def read(self, partition: Partition) -> Iterator[dict[str, Any]]:
        yield from ({"id": i, "extra": "not declared"} for i in range(partition.params["n"]))


class _BrokenSource(Source):
    @classmethod
    def spec(cls) -> dict[str, Any]:
        return {"connectionSpecification": {"type": "object", "properties": {}}}

    def check(self) -> None:
        return None

    def streams(self) -> list[Stream]:
        return [_Unpicklable()]


def test_the_kit_names_what_a_broken_source_breaks() -> None:
    report = run_conformance(_BrokenSource, {})
    failed = {c.name for c in report.failures}
    assert failed == {"discover broken: the primary key is declared",
                      "plan broken: the stream object pickles (tasks get it)",
                      "read broken: records fit the declared schema"}, str(report)
    with pytest.raises(AssertionError, match="FAIL plan broken: the stream object pickles"):
        assert_conformant(_BrokenSource, {})
