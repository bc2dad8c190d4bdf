"""The Iceberg catalog, through PyIceberg: tables loaded, created, evolved; a writability check.

Why PyIceberg and not Spark: no ``iceberg-spark-runtime`` is published for Spark
4.2 (every released runtime fails to load on it, measured: docs/destinations/
iceberg.md), while PyIceberg commits from the driver with no JVM at all.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from typing import TYPE_CHECKING

import pyarrow as pa

from headwater.destinations.iceberg._config import IcebergSettings, local_path

if TYPE_CHECKING:
    from pyiceberg.catalog import Catalog
    from pyiceberg.table import Table

#: Where PyIceberg keeps the name mapping that reads files without field ids by name.
NAME_MAPPING_PROPERTY = "schema.name-mapping.default"


def load(settings: IcebergSettings) -> Catalog:
    """The catalog the settings name (a SQL catalog creates its tables on first use).

    A SQL or hadoop catalog's warehouse folder is created first: the embedded
    catalog's SQLite file is in it; a hadoop catalog's namespaces are folders in
    it.  A REST catalog's server decides where tables live.
    """
    from pyiceberg.catalog import load_catalog

    if settings.catalog_type in ("sql", "hadoop"):
        os.makedirs(settings.warehouse_folder, exist_ok=True)
    return load_catalog(settings.catalog_name, **dict(settings.catalog_properties))


def ensure_namespace(catalog: Catalog, namespace: str) -> None:
    """Create ``namespace`` unless it exists (another process may create it meanwhile)."""
    from pyiceberg.exceptions import NamespaceAlreadyExistsError

    with contextlib.suppress(NamespaceAlreadyExistsError):
        catalog.create_namespace_if_not_exists(namespace)


def load_table(catalog: Catalog, identifier: str) -> Table | None:
    """The table ``identifier``, or None when there is none."""
    from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

    try:
        return catalog.load_table(identifier)
    except (NoSuchTableError, NoSuchNamespaceError):
        return None


def with_name_mapping(table: Table) -> Table:
    """``table``, with a name mapping: the tasks' files carry no Iceberg field ids.

    Schema changes through PyIceberg keep the mapping up to date afterwards.
    """
    if table.metadata.name_mapping() is None:
        with table.transaction() as tx:
            tx.set_properties(
                {NAME_MAPPING_PROPERTY: table.schema().name_mapping.model_dump_json()})
        table = table.refresh()
    return table


def add_columns(table: Table, columns: pa.Schema) -> Table:
    """``table`` with ``columns`` (none of which it has) added, in one commit."""
    if len(columns) == 0:
        return table
    with table.update_schema() as update:
        update.union_by_name(columns)
    return table.refresh()


def check(settings: IcebergSettings) -> None:
    """Prove the catalog reachable and writable: create, then drop, a scratch table.

    In the configured namespace (created if missing), so a catalog that lets this
    user write only there still passes.
    """
    catalog = load(settings)
    ensure_namespace(catalog, settings.namespace)
    scratch = f"{settings.namespace}._headwater_check_{uuid.uuid4().hex[:12]}"
    table = catalog.create_table(scratch, schema=pa.schema([pa.field("ok", pa.bool_())]))
    catalog.drop_table(scratch)
    folder = local_path(table.location())
    if folder is not None:  # dropping leaves its metadata file behind
        shutil.rmtree(folder, ignore_errors=True)


__all__ = ["NAME_MAPPING_PROPERTY", "add_columns", "check",
           "ensure_namespace", "load", "load_table", "with_name_mapping"]
