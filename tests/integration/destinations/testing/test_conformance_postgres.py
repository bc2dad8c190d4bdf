"""The destination kit's conformance run against PostgreSQL, in process on the shared Spark
session, each case in a schema of its own of one database; rows read back with psycopg."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from headwater.destinations.postgres import PostgresDestination
from headwater.destinations.testing import assert_conformant
from tests.integration.destinations.postgres._tables import config, read_rows

pytestmark = pytest.mark.spark


def test_postgres_keeps_the_destination_contract(spark: Any, tmp_path: Path,
                                                 postgres_server: Any) -> None:
    with postgres_server.database() as database:
        def make(folder: Path) -> PostgresDestination:
            schema = "c_" + "_".join(folder.relative_to(tmp_path).parts[:-1]).replace("-", "_")
            return PostgresDestination(config(postgres_server, database, schema))

        assert_conformant(make, spark, tmp_path, read_rows=read_rows)
