"""The built-in ``mysql`` source: tables and views of one MySQL 8 or MariaDB 10.6+ database.

Example connection snippet (a table read incrementally on a DATETIME cursor)::

    source:
      type: mysql
      config:
        host: db.internal
        database: shop
        username: headwater
        password: ${MYSQL_PASSWORD}
        cursor_fields: {orders: updated_at}
    streams:
      - {name: orders, sync_mode: incremental, destination_sync_mode: append_dedup,
         cursor_field: updated_at, primary_key: [id]}

Full refresh splits a table at its primary key's quantiles (:mod:`._partitioning`);
incremental reads use the postgres source's half-open windows and tie rule
(:mod:`headwater.connectors._cursor_windows`); executors read with connectorx
(:mod:`._reader`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

from headwater.connectors._boundary import (
    SEEN_AT,
    SEEN_KEYS,
    TOP_AT,
    TOP_KEYS,
    BoundaryCursor,
)
from headwater.connectors._config_model import model_spec, parse_model
from headwater.connectors._cursor_windows import cursor_windows
from headwater.connectors._table_stream import TableStream, converter_for
from headwater.connectors.mysql._catalog import TableInfo, discover_tables
from headwater.connectors.mysql._config import MySQLConfig
from headwater.connectors.mysql._errors import connect, explain
from headwater.connectors.mysql._partitioning import CursorQueries, key_ranges
from headwater.connectors.mysql._reader import partition_query, read_arrow
from headwater.errors import ConfigError, ConnectorError, HeadwaterError
from headwater.sdk import Partition, RecordOrBatch, Source, Stream

__all__ = ["MySQLSource", "MySQLStream"]

log = logging.getLogger(__name__)


class MySQLStream(TableStream):
    """One table or view.  Holds the config and the table's description only (pickles small)."""

    def __init__(self, settings: MySQLConfig, table: TableInfo) -> None:
        self._settings = settings
        self.table = table
        self._name = table.name
        cursor = settings.cursor_fields.get(table.name)
        column = table.column(cursor) if cursor else None
        if cursor and (column is None or column.type.cursor_kind is None):
            raise ConfigError(
                f"cursor_fields.{table.name} = {cursor!r} is not an integer, DATETIME or "
                f"TIMESTAMP column of {table.database}.{table.name}; candidates: "
                f"{', '.join(table.cursor_candidates) or 'none'}",
                field=f"source.config.cursor_fields.{table.name}")
        self._cursor_column = column
        # The SDK declares these as class attributes; a table's are known per instance.
        self.primary_key = tuple(table.primary_key)  # type: ignore[misc]
        self.namespace = table.database  # type: ignore[misc]
        self.cursor_field = cursor  # type: ignore[misc]
        self.state_converter = converter_for(  # type: ignore[misc]
            column.type.cursor_kind if column is not None else None)

    # ------------------------------------------------------------------ planning

    def _plan(self, state: Mapping[str, Any] | None, *, exact_append: bool) -> list[Partition]:
        settings = self._settings
        conn = connect(settings)
        try:
            if self._cursor_column is None:
                ranges = key_ranges(conn, self.table, self._split_column(),
                                    settings.rows_per_partition, settings.max_partitions)
                return [self._partition(p) for p in ranges]
            cursor = self.cursor(state, incremental=True)
            assert isinstance(cursor, BoundaryCursor)
            queries = CursorQueries(conn, self.table, self._cursor_column.name,
                                    cursor.converter, settings.rows_per_partition,
                                    settings.max_partitions, settings.boundary_keys_limit)
            windows = cursor_windows(queries, cursor, has_key=bool(self.table.primary_key),
                                     keys_limit=settings.boundary_keys_limit,
                                     exact_append=exact_append, stream=self._name)
        except HeadwaterError:
            raise  # a config error (partition_columns) or one already explained
        except Exception as exc:
            raise explain(exc, settings, stream=self._name) from exc
        finally:
            conn.close()
        plan = [self._partition(params) for params in windows]
        if state is None:
            plan.append(self.null_cursor_partition())
        return plan

    def _split_column(self) -> str | None:
        configured = self._settings.partition_columns.get(self._name)
        if configured:
            column = self.table.column(configured)
            if column is None or not column.type.splittable:
                raise ConfigError(
                    f"partition_columns.{self._name} = {configured!r} is not an integer or "
                    "text column "
                    f"of {self.table.database}.{self.table.name}",
                    field=f"source.config.partition_columns.{self._name}")
            return configured
        if len(self.table.primary_key) == 1:
            column = self.table.column(self.table.primary_key[0])
            if column is not None and column.type.splittable:
                return column.name
        return None  # no usable key: one partition

    # ------------------------------------------------------------------ reading

    def read(self, partition: Partition) -> Iterator[RecordOrBatch]:
        settings = self._settings
        try:
            query = partition_query(self.table, self._bounds(partition.params))
            yield from read_arrow(settings.url(), query, self.table.columns)
        except ConnectorError:
            raise
        except Exception as exc:
            raise explain(exc, settings, stream=self._name, partition=partition.id) from exc

    def _bounds(self, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """The reader's bounds of a partition's params: a key range as it is, a cursor
        window as parsed bounds on the cursor column."""
        if "start" not in params:
            return params
        assert self._cursor_column is not None and self.state_converter is not None
        parse = self.state_converter.parse
        # The first window also reads every value below the cursor's start.
        low = None if params["start"] == self.cursor_start() else parse(params["start"])
        bounds: dict[str, Any] = {"column": self._cursor_column.name, "lo": low,
                                  "hi": parse(params["end"]),
                                  "null": bool(params.get("cursor_null")),
                                  "key": list(self.table.primary_key)}
        for at, keys in ((TOP_AT, TOP_KEYS), (SEEN_AT, SEEN_KEYS)):
            if at in params:
                bounds[at], bounds[keys] = parse(params[at]), params.get(keys)
        return bounds


class MySQLSource(Source):
    """Tables and views of one MySQL or MariaDB database (see the module docs)."""

    type_name = "mysql"

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        self._settings = _parse(config)
        self._tables: list[TableInfo] | None = None

    @classmethod
    def spec(cls) -> dict[str, Any]:
        return model_spec(MySQLConfig)

    def tables(self) -> list[TableInfo]:
        if self._tables is None:
            settings = self._settings
            conn = connect(settings)
            try:
                self._tables = discover_tables(conn, settings.database, settings.tables)
            finally:
                conn.close()
            for table in self._tables:
                if table.unmapped:
                    log.warning("%s.%s: no type mapping for %s; carried as text",
                                table.database, table.name, ", ".join(table.unmapped))
        return self._tables

    def streams(self) -> list[Stream]:
        return [MySQLStream(self._settings, t) for t in self.tables()]

    def check(self) -> None:
        """Connect, then say plainly what the user cannot do (see the tables it names)."""
        settings = self._settings
        conn = connect(settings)
        try:
            problems = _readable_problems(conn, settings)
        finally:
            conn.close()
        if problems:
            raise ConnectorError("MySQL at {}:{} (database {!r}, user {!r}): {}".format(
                settings.host, settings.port, settings.database, settings.username,
                "; ".join(problems)))


def _readable_problems(conn: Any, settings: MySQLConfig) -> list[str]:
    """What keeps the user from reading the configured tables, in plain words."""
    with conn.cursor() as cursor:
        cursor.execute("SELECT TABLE_NAME FROM information_schema.TABLES "
                       "WHERE TABLE_SCHEMA = %s", [settings.database])
        visible = {r[0] for r in cursor.fetchall()}
    problems = []
    missing = [t for t in settings.tables if t not in visible]
    if missing:
        problems.append(f"no table the user may read is named {', '.join(missing)} "
                        "(missing, or it lacks SELECT on them: GRANT SELECT ON "
                        f"{settings.database}.* TO the user)")
    if not visible:
        problems.append("the user may read no table of the database (GRANT SELECT ON "
                        f"{settings.database}.* TO the user)")
    return problems


def _parse(config: Mapping[str, Any]) -> MySQLConfig:
    return parse_model(MySQLConfig, config, "mysql")
