"""Discover: each configured table's columns as Spark's JDBC reader types them, and its
primary key from the driver's ``DatabaseMetaData``.

Spark reads a table's schema with ``SELECT * FROM t WHERE 1=0`` (no rows); the
primary key comes from ``getPrimaryKeys`` on a connection of the same driver
in the driver JVM (:func:`._driver.connection`), tried with the table's name as
written, then upper and lower case (Oracle and DB2 keep names upper case,
PostgreSQL lower), and with the schema as a catalog (MySQL and MariaDB call a
database a catalog).  A query's stream has no key unless the config names one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from headwater.connectors._table_columns import TableColumns
from headwater.connectors.jdbc._config import JdbcConfig, TableSettings
from headwater.connectors.jdbc._driver import connection, reader
from headwater.connectors.jdbc._sql import Dialect
from headwater.connectors.jdbc._types import ColumnType, map_spark_type
from headwater.errors import ConfigError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["ColumnInfo", "TableInfo", "discover_tables"]


@dataclass(frozen=True)
class ColumnInfo:
    name: str
    type: ColumnType


@dataclass(frozen=True)
class TableInfo(TableColumns):
    settings: TableSettings
    columns: tuple[ColumnInfo, ...]
    primary_key: tuple[str, ...] = ()

    @property
    def relation(self) -> str:
        return Dialect("").relation(self.settings.table or self.settings.name,
                                    self.settings.query)

    @property
    def unmapped(self) -> list[str]:
        return [f"{c.name} ({c.type.spark_type})" for c in self.columns if not c.type.mapped]


def discover_tables(spark: SparkSession, settings: JdbcConfig) -> list[TableInfo]:
    """Every configured table or query, with its columns and primary key."""
    tables = []
    for table in settings.tables:
        relation = Dialect(settings.url).relation(table.table or table.name, table.query)
        schema = reader(spark, settings).option("dbtable", relation).load().schema
        columns = tuple(ColumnInfo(f.name, map_spark_type(f.dataType)) for f in schema.fields)
        if table.primary_key is not None:
            key = tuple(table.primary_key)
        elif table.query is None:
            key = _primary_key(spark, settings, table.table or table.name)
        else:
            key = ()
        tables.append(TableInfo(settings=table, columns=columns, primary_key=key))
    return tables


def _primary_key(spark: SparkSession, settings: JdbcConfig, table: str) -> tuple[str, ...]:
    schema, _, name = table.rpartition(".")
    with connection(spark, settings) as conn:
        meta = conn.getMetaData()
        for variant in dict.fromkeys((name, name.upper(), name.lower())):
            for catalog, in_schema in ((None, schema or None), (schema or None, None)):
                places = _places(meta.getTables(catalog, in_schema, variant, None), variant,
                                 catalog, in_schema)
                if places:
                    where = _the_place_read(places, conn, table)
                    return _key_columns(meta.getPrimaryKeys(*where, variant))
    return ()


#: Where a table the driver lists lives: its catalog and its schema (either may be null).
Place = tuple[str | None, str | None]


def _places(result: Any, name: str, catalog: str | None, schema: str | None) -> list[Place]:
    """The places of the tables named exactly ``name`` (``getTables`` takes LIKE patterns,
    where ``_`` matches any character), in ``catalog``/``schema`` where given."""
    places: list[Place] = []
    try:
        while result.next():
            place = (_text(result.getString("TABLE_CAT")), _text(result.getString("TABLE_SCHEM")))
            if (str(result.getString("TABLE_NAME")) == name
                    and catalog in (None, place[0]) and schema in (None, place[1])):
                places.append(place)
    finally:
        result.close()
    return list(dict.fromkeys(places))


def _the_place_read(places: list[Place], conn: Any, table: str) -> Place:
    """The table Spark reads under ``table``: the one match, or, for a name that matches
    tables in several schemas, the one in the session's current schema (PostgreSQL, Oracle)
    or database (MySQL, MariaDB), where an unqualified name resolves.

    Anything else is refused: a key taken from another schema's table (``archive.users``
    for ``public.users``, or the keys of both mixed) would deduplicate the stream's rows on
    the wrong columns, and nothing downstream would say so.
    """
    if len(places) == 1:
        return places[0]
    current_schema, current_catalog = _text(conn.getSchema()), _text(conn.getCatalog())
    here = [(catalog, schema) for catalog, schema in places
            if (schema is not None and schema == current_schema)
            or (schema is None and catalog is not None and catalog == current_catalog)]
    if len(here) == 1:
        return here[0]
    listed = ", ".join(sorted(".".join(p for p in place if p) for place in places))
    raise ConfigError(f"table {table!r} names tables in several schemas ({listed}), and which "
                      "one is read cannot be told: write the table as schema.table, or give "
                      "the stream's primary_key")


def _key_columns(result: Any) -> tuple[str, ...]:
    columns: list[tuple[int, str]] = []
    try:
        while result.next():
            columns.append((int(result.getShort("KEY_SEQ")), str(result.getString("COLUMN_NAME"))))
    finally:
        result.close()
    return tuple(name for _, name in sorted(columns))


def _text(value: Any) -> str | None:
    return None if value is None else str(value)
