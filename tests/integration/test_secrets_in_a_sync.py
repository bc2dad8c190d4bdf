"""A real sync shows its passwords nowhere: not in ``sync --json -vv`` (output and logs),
``check``, ``runs show``, nor anything the metadata store keeps (runs, attempts, run logs).

One PostgreSQL role, its password short (two characters: masking by value used to skip
those) or long, is the PostgreSQL source's ``password`` field, and sits in the Iceberg
SQL catalog's URI and in the metadata store's URL: the three places a password is
written in a connection file.  The sync runs in process on the suite's Spark session.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml
from typer.testing import CliRunner

from headwater.cli.app import app
from headwater.config._secrets import _registry
from tests._postgres import PostgresServer

pytestmark = pytest.mark.spark


@pytest.fixture
def database(postgres_server: PostgresServer) -> Iterator[str]:
    with postgres_server.database() as name:
        yield name


def _store_text(url: str) -> str:
    """Every row of every table in the store's database, as text."""
    with psycopg.connect(url) as conn:
        tables = [row[0] for row in conn.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")]
        return "\n".join(str(row[0]) for table in tables
                         for row in conn.execute(f'SELECT t::text FROM "{table}" t'))


@pytest.mark.parametrize("password", ["Q7", "loader-long-Pa55word"], ids=["short", "long"])
def test_no_password_in_output_logs_or_store(
        spark: Any, tmp_path: Path, postgres_server: PostgresServer, database: str,
        monkeypatch: pytest.MonkeyPatch, password: str) -> None:
    _registry.clear()  # nothing an earlier test registered helps
    role = f"loader_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(postgres_server.database_url(database), autocommit=True) as admin:
        admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")
        admin.execute(f'ALTER DATABASE "{database}" OWNER TO {role}')
        admin.execute(f"CREATE TABLE items (id int PRIMARY KEY, name text); "
                      f"INSERT INTO items SELECT g, 'item ' || g FROM generate_series(1, 50) g;"
                      f"ALTER TABLE items OWNER TO {role}")
    url = postgres_server.database_url(database, user=role, password=password)
    path = tmp_path / "leaky.yaml"
    path.write_text(yaml.safe_dump({
        "name": "leaky",
        "source": {"type": "postgres", "config": postgres_server.source_config(
            database, username=role, password=password)},
        "destination": {"type": "iceberg", "config": {
            "warehouse": str(tmp_path / "warehouse"),
            "catalog": {"type": "sql", "uri": url.replace("postgresql://",
                                                          "postgresql+psycopg://")}}},
        "metadata_store": url,
        "streams": [{"name": "items", "sync_mode": "full_refresh"}],
    }, sort_keys=False))
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()

    synced = runner.invoke(app, ["sync", str(path), "--json", "-vv"])
    assert synced.exit_code == 0, synced.output
    document = json.loads(synced.stdout)
    assert document["streams"][0]["records_written"] == 50
    shown = runner.invoke(app, ["runs", "--store", url, "show", document["run_id"], "--json"])
    assert shown.exit_code == 0, shown.output
    checked = runner.invoke(app, ["check", str(path), "--json", "-vv"])
    assert checked.exit_code == 0, checked.output
    # A catalog database that is not there: the check's error quotes the catalog's URI.
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text(path.read_text().replace(f"/{database}\n", "/nowhere\n", 1))
    refused = runner.invoke(app, ["check", str(wrong), "--json"])
    assert refused.exit_code == 1, refused.output
    assert "/nowhere is not usable" in json.loads(refused.stdout)["error"]["message"]

    store = _store_text(url)
    assert "partition" in store  # the run, its plan and its log lines are there
    for where, text in [("sync", synced.stdout + synced.stderr),
                        ("runs show", shown.stdout + shown.stderr),
                        ("check", checked.stdout + checked.stderr),
                        ("refused check", refused.stdout + refused.stderr), ("store", store)]:
        assert password not in text, where
