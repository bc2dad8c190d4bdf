"""The built-in ``postgres`` source: tables and views of one database.

Example connection snippet (a table read incrementally on a timestamp cursor,
the case incremental database syncs are mostly about)::

    source:
      type: postgres
      config:
        host: db.internal
        database: shop
        username: headwater
        password: ${PG_PASSWORD}
        cursor_fields: {users: register_time}
    streams:
      - {name: users, sync_mode: incremental, destination_sync_mode: append_dedup,
         cursor_field: register_time, primary_key: [id]}

With ``replication_method: cdc`` every table with a primary key is read by
logical replication instead (see :mod:`._cdc`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

import psycopg
from psycopg import sql

from headwater.connectors._config_model import model_spec, parse_model
from headwater.connectors._stream_keys import (
    refuse_unknown_streams,
    refuse_unused_stream_settings,
)
from headwater.connectors._table_stream import TableStream, converter_for
from headwater.connectors.postgres import _cdc
from headwater.connectors.postgres._boundary import (
    SEEN_AT,
    SEEN_KEYS,
    TOP_AT,
    TOP_KEYS,
    BoundaryCursor,
)
from headwater.connectors.postgres._catalog import TableInfo, discover_tables
from headwater.connectors.postgres._cdc_cursor import reads_changes, snapshot_plan
from headwater.connectors.postgres._config import PostgresConfig
from headwater.connectors.postgres._errors import connect, explain
from headwater.connectors.postgres._misfits import notes_from_misfits
from headwater.connectors.postgres._partitioning import cursor_windows, key_ranges
from headwater.connectors.postgres._reader import partition_query, read_arrow
from headwater.connectors.postgres._window_count import count_window
from headwater.errors import ConfigError, ConnectorError
from headwater.sdk import (
    CannotCountWindow,
    Cursor,
    Partition,
    RecordOrBatch,
    RowWindow,
    Source,
    Stream,
    WindowCount,
)

__all__ = ["PostgresSource", "PostgresStream"]

log = logging.getLogger(__name__)

class PostgresStream(TableStream):
    """One table or view.  Holds the config and the table's description only (pickles small)."""

    def __init__(self, settings: PostgresConfig, table: TableInfo, stream_name: str) -> None:
        self._settings = settings
        self.table = table
        self._name = stream_name
        self._cdc = settings.replication_method == "cdc" and bool(table.primary_key)
        cursor = settings.cursor_fields.get(stream_name)
        column = table.column(cursor) if cursor else None
        if cursor and (column is None or column.type.cursor_kind is None):
            raise ConfigError(
                f"cursor_fields.{stream_name} = {cursor!r} is not an integer or date-time "
                f"column of {table.schema}.{table.name}; candidates: "
                f"{', '.join(table.cursor_candidates) or 'none'}",
                field=f"source.config.cursor_fields.{stream_name}")
        refuse_unused_stream_settings(settings.cursor_fields, settings.partition_columns,
                                      stream_name, cdc=self._cdc)
        self._cursor_column = column
        # The SDK declares these as class attributes; a table's are known per instance.
        self.primary_key = tuple(table.primary_key)  # type: ignore[misc]
        self.namespace = table.schema  # type: ignore[misc]
        self.cursor_field = _cdc.LSN_COLUMN if self._cdc else cursor  # type: ignore[misc]
        self.state_converter = converter_for(  # type: ignore[misc]
            column.type.cursor_kind if column is not None else None)

    def change_columns(self) -> Mapping[str, dict[str, Any]]:
        return _cdc.CDC_COLUMNS if self._cdc else {}

    def cursor(self, state: Mapping[str, Any] | None, incremental: bool) -> Cursor:
        if incremental and self._cdc:
            return _cdc.LsnCursor(state)
        return super().cursor(state, incremental)

    # ------------------------------------------------------------------ planning

    def _plan(self, state: Mapping[str, Any] | None, *, exact_append: bool) -> list[Partition]:
        settings = self._settings
        with connect(settings) as conn:
            if self._cdc and reads_changes(state):
                return [_cdc.plan_changes(conn, settings, self._name, self.table, state)]
            if self._cdc:
                # A first snapshot, or one a failed run left unfinished (state holds its
                # progress): the slot has not moved, so reading it all again is consistent.
                return self._plan_snapshot(conn)
            if self._cursor_column is None:
                ranges = key_ranges(conn, self.table, self._split_column(),
                                    settings.rows_per_partition, settings.max_partitions)
                return [self._partition({**p, **self._split_type(p)}) for p in ranges]
            cursor = self.cursor(state, incremental=True)
            assert isinstance(cursor, BoundaryCursor)
            windows = cursor_windows(conn, self.table, self._cursor_column.name,
                                     self._cursor_column.type.pg_type, cursor,
                                     settings.rows_per_partition, settings.max_partitions,
                                     keys_limit=settings.boundary_keys_limit,
                                     exact_append=exact_append, stream=self._name)
        plan = [self._partition(params) for params in windows]
        if state is None:
            plan.append(self.null_cursor_partition())
        return plan

    def _plan_snapshot(self, conn: psycopg.Connection[Any]) -> list[Partition]:
        """The key ranges of the first snapshot, read after the slot exists (see :mod:`._cdc`)."""
        settings = self._settings
        lsn = _cdc.ensure_slot(conn, settings, [self.table])
        ranges = key_ranges(conn, self.table, self._split_column(), settings.rows_per_partition,
                            settings.max_partitions)
        plan = [self._partition({**params, **self._split_type(params), "snapshot_lsn": lsn,
                                 "of": len(ranges)}) for params in ranges]
        name = snapshot_plan([p.id for p in plan])
        return [Partition(p.stream, p.id, {**p.params, "snapshot_plan": name}) for p in plan]

    def _split_column(self) -> str | None:
        configured = self._settings.partition_columns.get(self._name)
        if configured:
            column = self.table.column(configured)
            if column is None or not column.type.splittable:
                raise ConfigError(
                    f"partition_columns.{self._name} = {configured!r} is not an integer column "
                    f"of {self.table.schema}.{self.table.name}",
                    field=f"source.config.partition_columns.{self._name}")
            return configured
        if len(self.table.primary_key) == 1:
            column = self.table.column(self.table.primary_key[0])
            if column is not None and column.type.splittable:
                return column.name
        return None  # no usable key: one partition

    def _split_type(self, params: Mapping[str, Any]) -> dict[str, Any]:
        column = self.table.column(params["column"]) if params.get("column") else None
        return {"type": column.type.pg_type} if column is not None else {}

    def _partition(self, params: dict[str, Any]) -> Partition:
        if "changes_upto" in params:
            return Partition(self._name, f"{self._name}:changes:{params['changes_from']}/"
                             f"{params['changes_upto']}", params)
        return super()._partition(params)

    # ------------------------------------------------------------------ reading

    def read(self, partition: Partition) -> Iterator[RecordOrBatch]:
        params = partition.params
        settings = self._settings
        try:
            if "changes_upto" in params:
                yield from _cdc.read_changes(settings, self.table, params)
                return
            bounds = self._bounds(params)
            extra, extra_values = _cdc.snapshot_columns(params["snapshot_lsn"]) \
                if "snapshot_lsn" in params else (None, {})
            query, values = partition_query(self.table, bounds, extra)
            for batch in read_arrow(settings.conninfo(), query, {**values, **extra_values}):
                yield notes_from_misfits(batch, self.table.columns)
        except ConnectorError:
            raise
        except Exception as exc:
            raise explain(exc, settings, stream=self._name, partition=partition.id) from exc

    def _bounds(self, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """What :func:`._reader.partition_query` reads of a partition's params: a key
        range as it is, a cursor window as bounds on the cursor column."""
        if "start" not in params:
            return params
        assert self._cursor_column is not None
        # The first window also reads every value below the cursor's start.
        low = None if params["start"] == self.cursor_start() else params["start"]
        return {"column": self._cursor_column.name, "lo": low, "hi": params["end"],
                "type": self._cursor_column.type.pg_type,
                "null": bool(params.get("cursor_null")),
                "key": list(self.table.primary_key),
                **{k: params[k] for k in (TOP_AT, TOP_KEYS, SEEN_AT, SEEN_KEYS) if k in params}}

    # ------------------------------------------------------------------ verify

    def count_window(self, partition: Partition) -> WindowCount:
        """``count(*)`` and the keys' checksum of the partition's window, now, in SQL
        (:mod:`._window_count`); change data capture's partitions have no window."""
        self._window_params(partition)
        try:
            with connect(self._settings) as conn:
                return count_window(conn, self.table, self._bounds(partition.params))
        except ConnectorError:
            raise
        except Exception as exc:
            raise explain(exc, self._settings, stream=self._name,
                          partition=partition.id) from exc

    def table_window(self, partition: Partition) -> RowWindow:
        """The table's rows of the window: the cursor (or key) column within its bounds,
        as the reader's ``WHERE`` (the first cursor window is open below)."""
        bounds = self._bounds(self._window_params(partition))
        column = bounds.get("column")
        if not column:
            return RowWindow(None)
        if bounds.get("null"):
            return RowWindow(str(column), null=True)
        converter = self.state_converter if "start" in partition.params else None

        def value(name: str) -> Any:
            raw = bounds.get(name)
            if raw is None:
                return None
            return converter.parse(raw) if converter is not None else int(raw)

        return RowWindow(str(column), value("lo"), value("hi"))

    def _window_params(self, partition: Partition) -> Mapping[str, Any]:
        if "changes_upto" in partition.params or "snapshot_lsn" in partition.params:
            raise CannotCountWindow(f"stream {self._name!r} is read by change data capture: "
                                    "its partitions are changes, not windows of the table",
                                    stream=self._name)
        return partition.params

    def on_state_committed(self, state: Mapping[str, Any] | None) -> None:
        """Change data capture: the slot moves to the LSN the committed state holds."""
        if self._cdc and reads_changes(state):
            _cdc.advance_slot(self._settings, self.table, state)


class PostgresSource(Source):
    """Tables and views of one PostgreSQL database (see the module docs)."""

    type_name = "postgres"

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        self._settings = parse_model(PostgresConfig, config, "postgres")
        self._tables: list[TableInfo] | None = None

    @classmethod
    def spec(cls) -> dict[str, Any]:
        return model_spec(PostgresConfig)

    def tables(self) -> list[TableInfo]:
        if self._tables is None:
            with connect(self._settings) as conn:
                self._tables = discover_tables(conn, self._settings.schemas,
                                               self._settings.json_as)
            for table in self._tables:
                if table.unmapped:
                    log.warning("%s.%s: no type mapping for %s; carried as text", table.schema,
                                table.name, ", ".join(table.unmapped))
        return self._tables

    def streams(self) -> list[Stream]:
        tables = self.tables()
        qualified = len(self._settings.schemas) > 1
        names = [(t, f"{t.schema}.{t.name}" if qualified else t.name) for t in tables]
        settings = self._settings
        refuse_unknown_streams({"cursor_fields": settings.cursor_fields,
                                "partition_columns": settings.partition_columns},
                               (name for _, name in names))
        return [PostgresStream(settings, table, name) for table, name in names]

    def check(self) -> None:
        """Connect, then say plainly what the role cannot do (read tables, replicate)."""
        settings = self._settings
        with connect(settings) as conn:
            problems = _readable_problems(conn, settings.schemas)
            if settings.replication_method == "cdc":
                problems += _cdc.check_replication(conn, settings)
        if problems:
            raise ConnectorError("PostgreSQL at {}:{} (database {!r}, role {!r}): {}".format(
                settings.host, settings.port, settings.database, settings.username,
                "; ".join(problems)))


def _readable_problems(conn: psycopg.Connection[Any], schemas: list[str]) -> list[str]:
    problems = []
    for schema in schemas:
        row = conn.execute("SELECT has_schema_privilege(n.oid, 'USAGE') FROM pg_namespace n "
                           "WHERE n.nspname = %s", [schema]).fetchone()
        if row is None:
            problems.append(f"schema {schema!r} does not exist")
        elif not row[0]:
            problems.append(f"the role may not use schema {schema!r} (GRANT USAGE ON SCHEMA)")
    if problems:
        return problems
    hidden = conn.execute(sql.SQL(
        "SELECT n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n "
        "ON n.oid = c.relnamespace WHERE n.nspname = ANY(%s) AND c.relkind IN ('r','v','m','p') "
        "AND NOT has_table_privilege(c.oid, 'SELECT') ORDER BY 1"), [schemas]).fetchall()
    if hidden:
        # Not fatal: the catalog simply leaves them out; say so, so nobody wonders why.
        log.warning("the role may not SELECT from %s; they are left out of the catalog "
                    "(GRANT SELECT to read them)", ", ".join(r[0] for r in hidden[:10]))
    return problems

