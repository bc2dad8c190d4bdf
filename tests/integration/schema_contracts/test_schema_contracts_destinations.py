"""Schema contracts on the destinations after Delta: Iceberg (its path-based catalog),
PostgreSQL (the session's server) and files, each over the scenario's subset that still
covers every setting (``_scenario.SUBSET``), in the test process on the shared Spark
session; each destination's tables are read back by a client of the test's own."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.integration.destinations.files._plain import read_stream
from tests.integration.destinations.iceberg._catalogs import iceberg_config, load_table
from tests.integration.destinations.postgres._tables import config as postgres_config
from tests.integration.schema_contracts._scenario import SUBSET, Lake, run_matrix

pytestmark = pytest.mark.spark


def test_iceberg(spark: Any, tmp_path: Path) -> None:
    from pyiceberg.exceptions import NoSuchTableError

    config = iceberg_config(tmp_path)

    def rows(stream: str) -> list[dict[str, Any]] | None:
        try:
            return load_table(config, stream).scan().to_arrow().to_pylist()
        except NoSuchTableError:
            return None

    def commits(stream: str) -> Any:
        return load_table(config, stream).metadata.current_snapshot_id

    run_matrix(tmp_path, Lake(rows, commits, {"type": "iceberg", "config": config}), SUBSET,
               record_level=False)


def test_postgres(spark: Any, tmp_path: Path, postgres_server: Any) -> None:
    schema = f"t_{uuid.uuid4().hex[:10]}"
    with postgres_server.database() as database:
        url = postgres_server.database_url(database)

        def query(statement: str, *params: Any) -> list[tuple[Any, ...]]:
            with psycopg.connect(url, options="-c TimeZone=UTC") as conn:
                return conn.execute(statement, list(params)).fetchall()

        def rows(stream: str) -> list[dict[str, Any]] | None:
            if query("SELECT to_regclass(%s)", f'"{schema}"."{stream}"') == [(None,)]:
                return None
            with psycopg.connect(url, options="-c TimeZone=UTC") as conn:
                cursor = conn.execute(f'SELECT * FROM "{schema}"."{stream}"')
                names = [c.name for c in cursor.description or ()]
                return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

        def commits(stream: str) -> Any:
            return query("SELECT count(*) FROM _headwater.commit_markers WHERE stream = %s",
                         stream)

        destination = {"type": "postgres",
                       "config": postgres_config(postgres_server, database, schema)}
        run_matrix(tmp_path, Lake(rows, commits, destination), SUBSET, record_level=False)


def test_files(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "files"

    def rows(stream: str) -> list[dict[str, Any]] | None:
        if not list((root / stream).glob("_manifests/*.json")):
            return None
        return read_stream(str(root / stream)).to_pylist()

    def commits(stream: str) -> Any:
        return sorted(p.name for p in (root / stream).glob("_manifests/*.json"))

    # Files keep each file's own types (no table evolves), so evolve's type change is not
    # one table's: the subset without it (evolve's new table is the Delta matrix's).
    subset = {k: v for k, v in SUBSET.items() if k != "s_evolve"}
    run_matrix(tmp_path, Lake(rows, commits, {"type": "files", "config": {
        "path": str(root), "format": "parquet"}}), subset, record_level=False)
