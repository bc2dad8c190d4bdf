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
(:mod:`._reader`).  With ``replication_method: cdc`` every table with a primary key
is read by change data capture from the binary log instead (:mod:`._binlog`): a
snapshot in the same key ranges, then the changes.
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
from headwater.connectors._cdc_state import SNAPSHOT, snapshot_plan
from headwater.connectors._config_model import model_spec, parse_model
from headwater.connectors._cursor_windows import cursor_windows
from headwater.connectors._stream_keys import (
    refuse_unknown_streams,
    refuse_unused_stream_settings,
)
from headwater.connectors._table_stream import TableStream, converter_for
from headwater.connectors.mysql import _binlog
from headwater.connectors.mysql._catalog import TableInfo, discover_tables
from headwater.connectors.mysql._config import MySQLConfig
from headwater.connectors.mysql._errors import connect, explain
from headwater.connectors.mysql._partitioning import CursorQueries, key_ranges
from headwater.connectors.mysql._reader import partition_query, read_arrow
from headwater.errors import ConfigError, ConnectorError, HeadwaterError
from headwater.sdk import Cursor, Partition, RecordOrBatch, Source, Stream

__all__ = ["MySQLSource", "MySQLStream"]

log = logging.getLogger(__name__)


class MySQLStream(TableStream):
    """One table or view.  Holds the config and the table's description only (pickles small)."""

    def __init__(self, settings: MySQLConfig, table: TableInfo) -> None:
        self._settings = settings
        self.table = table
        self._name = table.name
        self._cdc = settings.replication_method == "cdc" and bool(table.primary_key)
        cursor = settings.cursor_fields.get(table.name)
        column = table.column(cursor) if cursor else None
        if cursor and (column is None or column.type.cursor_kind is None):
            raise ConfigError(
                f"cursor_fields.{table.name} = {cursor!r} is not an integer, DATETIME or "
                f"TIMESTAMP column of {table.database}.{table.name}; candidates: "
                f"{', '.join(table.cursor_candidates) or 'none'}",
                field=f"source.config.cursor_fields.{table.name}")
        refuse_unused_stream_settings(settings.cursor_fields, settings.partition_columns,
                                      table.name, cdc=self._cdc)
        self._cursor_column = column
        # The SDK declares these as class attributes; a table's are known per instance.
        self.primary_key = tuple(table.primary_key)  # type: ignore[misc]
        self.namespace = table.database  # type: ignore[misc]
        self.cursor_field = _binlog.CURSOR_COLUMN if self._cdc else cursor  # type: ignore[misc]
        self.state_converter = converter_for(  # type: ignore[misc]
            column.type.cursor_kind if column is not None else None)

    def change_columns(self) -> Mapping[str, dict[str, Any]]:
        return _binlog.CDC_COLUMNS if self._cdc else {}

    def cursor(self, state: Mapping[str, Any] | None, incremental: bool) -> Cursor:
        if incremental and self._cdc:
            return _binlog.BinlogCursor(state)
        return super().cursor(state, incremental)

    # ------------------------------------------------------------------ planning

    def _plan(self, state: Mapping[str, Any] | None, *, exact_append: bool) -> list[Partition]:
        settings = self._settings
        conn = connect(settings)
        try:
            if self._cdc:
                _binlog.BinlogCursor(state)  # validates its shape
                if _binlog.BinlogCursor.reads_changes(state):
                    assert state is not None
                    return [_binlog.plan_changes(conn, self._name, state)]
                return self._plan_snapshot(conn, state)
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

    def _plan_snapshot(self, conn: Any, state: Mapping[str, Any] | None) -> list[Partition]:
        """The key ranges of the first snapshot, the binary log's position taken before
        them (see :mod:`._binlog`: the handover).

        A snapshot a failed run left unfinished (the state holds its progress) is read
        again from the position it started at, never a new one: its committed rows
        carry that position, and the changes since (a delete of one of them, say) are
        read from there on.
        """
        settings = self._settings
        unfinished = (state or {}).get(SNAPSHOT)
        position = (str(_binlog.require_kept(conn, unfinished[_binlog.BinlogCursor.KEY],
                                             self._name))
                    if isinstance(unfinished, Mapping) else
                    str(_binlog.snapshot_position(conn)))
        ranges = key_ranges(conn, self.table, self._split_column(), settings.rows_per_partition,
                            settings.max_partitions)
        key = _binlog.BinlogCursor.snapshot_param()
        plan = [self._partition({**params, key: position, "of": len(ranges)})
                for params in ranges]
        name = snapshot_plan([p.id for p in plan])
        return [Partition(p.stream, p.id, {**p.params, "snapshot_plan": name}) for p in plan]

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
        params = partition.params
        try:
            if "changes_upto" in params:
                yield from _binlog.read_changes(settings, self.table, params)
                return
            query = partition_query(self.table, self._bounds(params))
            snapshot = params.get(_binlog.BinlogCursor.snapshot_param())
            for batch in read_arrow(settings.url(), query, self.table.columns):
                yield batch if snapshot is None else _binlog.snapshot_columns(batch, snapshot)
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
        tables = self.tables()
        settings = self._settings
        refuse_unknown_streams({"cursor_fields": settings.cursor_fields,
                                "partition_columns": settings.partition_columns},
                               (t.name for t in tables))
        return [MySQLStream(settings, t) for t in tables]

    def check(self) -> None:
        """Connect, then say plainly what the user cannot do (see the tables it names)."""
        settings = self._settings
        conn = connect(settings)
        try:
            problems = _readable_problems(conn, settings)
            replication = _binlog.check_replication(conn, settings) \
                if settings.replication_method == "cdc" else []
        finally:
            conn.close()
        where = (f"MySQL at {settings.host}:{settings.port} (database {settings.database!r}, "
                 f"user {settings.username!r})")
        if problems:
            raise ConnectorError(f"{where}: {'; '.join(problems + replication)}")
        if replication:
            # The server's settings or the user's grants, not a failure of the read: the
            # exit code of a config problem (2), as a setting to change before a sync.
            raise ConfigError(f"{where}: {'; '.join(replication)}",
                              field="source.config.replication_method")


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
