"""The catalog kinds the Iceberg tests start for real, and a reader of each of the test's own.

Every kind is real on 127.0.0.1: the path-based catalog in Iceberg's Hadoop
layout (the default), a SQLite file, a PostgreSQL database
(``tests/_postgres.py``), and Apache Iceberg's REST catalog server
(``_rest_catalog.py``).
The servers are started once per session, and only when a test asks for them:
each test gets a database (PostgreSQL) or a namespace (REST) of its own.

The ``config`` fixture (``conftest.py``) runs a test on every kind; a test that
checks a catalog-sensitive part on fewer kinds names them with
``pytest.mark.parametrize("config", [...], indirect=True)``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table

#: Every catalog kind the tests start for real.
CATALOG_KINDS = ["sqlite", "postgresql", "rest", "hadoop"]


def iceberg_config(folder: Path, **catalog: Any) -> dict[str, Any]:
    """The destination's config: its warehouse in ``folder``, on ``catalog`` (default: the
    destination's default, the path-based hadoop catalog)."""
    config: dict[str, Any] = {"warehouse": str(folder / "warehouse")}
    if catalog:
        config["catalog"] = catalog
    return config


@contextmanager
def catalog_config(kind: str, folder: Path,
                   request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    """The destination's config on a catalog of ``kind`` (servers asked of ``request``)."""
    if kind == "sqlite":
        yield iceberg_config(folder, type="sql")
    elif kind == "hadoop":
        yield iceberg_config(folder)  # the default
    elif kind == "postgresql":
        server = request.getfixturevalue("postgres_server")
        with server.database() as database:
            uri = server.database_url(database).replace("postgresql://",
                                                        "postgresql+psycopg2://")
            yield iceberg_config(folder, type="sql", uri=uri)
    elif kind == "rest":
        rest = request.getfixturevalue("iceberg_rest_catalog")
        # The server is shared by the session: each test writes a namespace of its own.
        yield {**iceberg_config(folder, type="rest", uri=rest.uri),
               "namespace": f"t_{uuid.uuid4().hex[:12]}"}
    else:
        raise ValueError(f"no catalog kind {kind!r}; the kinds are {CATALOG_KINDS}")


def reader(config: dict[str, Any]) -> Catalog:
    """A PyIceberg catalog client of the test's own for the destination's ``config``.

    Built here, not by the destination: what a sync wrote must read back through
    a client that shares nothing with the writer.  No ``catalog.type`` means the
    hadoop catalog (the default on a new warehouse), or SQL when a ``uri`` is given.
    """
    from pyiceberg.catalog import load_catalog

    catalog = dict(config.get("catalog") or {})
    kind = catalog.get("type") or ("sql" if catalog.get("uri") else "hadoop")
    warehouse = Path(config["warehouse"])
    if kind == "rest":
        return load_catalog("reader", type="rest", uri=catalog["uri"])
    if kind == "hadoop":
        return load_catalog("reader", **{
            "py-catalog-impl": "headwater.destinations.iceberg._hadoop.HadoopCatalog",
            "warehouse": warehouse.as_uri()})
    uri = catalog.get("uri") or f"sqlite:///{warehouse}/catalog.db"
    return load_catalog("headwater", type="sql", uri=uri, warehouse=warehouse.as_uri())


def identifier(config: dict[str, Any], stream: str = "users") -> str:
    """The table of ``stream`` (the destination's default namespace, no prefix)."""
    return f"{config.get('namespace') or 'headwater'}.{stream}"


def load_table(config: dict[str, Any], stream: str = "users") -> Table:
    """``stream``'s table as it is now, read through a fresh :func:`reader`."""
    return reader(config).load_table(identifier(config, stream))


def unreferenced_files(table: Table) -> set[str]:
    """Parquet files in ``table``'s data folder that none of its snapshots references.

    Files a rewrite removed stay referenced (older snapshots still read them).
    """
    referenced = {Path(t.file.file_path.removeprefix("file://")).name
                  for s in table.snapshots()
                  for t in table.scan(snapshot_id=s.snapshot_id).plan_files()}
    data = Path(table.location().removeprefix("file://")) / "data"
    return {p.name for p in data.rglob("*.parquet")} - referenced
