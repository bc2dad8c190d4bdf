"""The built-in ``jdbc`` source: tables of any database with a JDBC driver on Maven Central.

Example connection snippet (``docs/connectors/jdbc.md`` has the whole story)::

    source:
      type: jdbc
      config:
        url: jdbc:postgresql://db.internal:5432/shop
        driver: org.postgresql:postgresql:42.7.4
        username: headwater
        password: ${DB_PASSWORD}
        tables:
          - {name: orders, table: public.orders, cursor_field: updated_at}

Rows are read by Spark's JDBC reader (:meth:`JdbcStream.spark_frame`), one
Spark partition per Headwater partition, with bounds Headwater computed
(:mod:`._partitioning`); state, checkpoints and commits are the engine's, as
for every source.  Incremental reads follow the PostgreSQL source's
half-open windows and tie rule (:mod:`headwater.connectors._cursor_windows`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

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
from headwater.connectors.jdbc._catalog import TableInfo, discover_tables
from headwater.connectors.jdbc._config import JdbcConfig
from headwater.connectors.jdbc._driver import connection, explain, reader
from headwater.connectors.jdbc._partitioning import (
    Cutter,
    JdbcWindowQueries,
    key_literal_values,
    key_ranges,
    range_predicate,
)
from headwater.connectors.jdbc._sql import Dialect
from headwater.errors import ConfigError, ConnectorError
from headwater.sdk import (
    Partition,
    RecordOrBatch,
    Source,
    Stream,
)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["JdbcSource", "JdbcStream"]

log = logging.getLogger(__name__)

def _spark() -> SparkSession:
    """The running session (the active one of this thread, else the process's default):
    the engine starts the connection's before it builds this source (``needs_spark``),
    a sync's streams plan in threads of their own, a notebook has its own session."""
    from pyspark.errors import PySparkRuntimeError
    from pyspark.sql import SparkSession

    try:
        return SparkSession.active()
    except PySparkRuntimeError:
        raise ConnectorError("the jdbc source reads through Spark and no Spark session is "
                             "running: build it with headwater.engine.build_source, which "
                             "starts the connection's session") from None


class JdbcStream(TableStream):
    """One table or query.  Holds the config and the table's description only (pickles small)."""

    def __init__(self, settings: JdbcConfig, table: TableInfo) -> None:
        self._settings = settings
        self.table = table
        self._name = table.settings.name
        cursor = table.settings.cursor_field
        column = table.column(cursor) if cursor else None
        if cursor and (column is None or column.type.cursor_kind is None):
            raise ConfigError(
                f"tables[{self._name}].cursor_field = {cursor!r} is not an integer or "
                f"timestamp column; candidates: {', '.join(table.cursor_candidates) or 'none'}",
                field="source.config.tables")
        self._cursor_column = column
        # The SDK declares these as class attributes; a table's are known per instance.
        self.primary_key = tuple(table.primary_key)  # type: ignore[misc]
        self.cursor_field = cursor  # type: ignore[misc]
        self.state_converter = converter_for(  # type: ignore[misc]
            column.type.cursor_kind if column is not None else None)

    # ------------------------------------------------------------------ planning

    def _plan(self, state: Mapping[str, Any] | None, *, exact_append: bool) -> list[Partition]:
        settings = self._settings
        spark = _spark()
        try:
            if self._cursor_column is None:
                return [self._partition(p)
                        for p in key_ranges(spark, settings, self.table, self._split_column())]
            cursor = self.cursor(state, incremental=True)
            assert isinstance(cursor, BoundaryCursor)
            queries = JdbcWindowQueries(
                Cutter(spark, settings, self.table, self._cursor_column.name), cursor.converter,
                key=self._boundary_key(), keys_limit=settings.boundary_keys_limit)
            windows = cursor_windows(queries, cursor, has_key=bool(self.primary_key),
                                     keys_limit=settings.boundary_keys_limit,
                                     exact_append=exact_append, stream=self._name)
        except (ConnectorError, ConfigError):
            raise
        except Exception as exc:
            raise explain(exc, settings, stream=self._name) from exc
        plan = [self._partition(params) for params in windows]
        if state is None:
            plan.append(self.null_cursor_partition())
        return plan

    def _split_column(self) -> str | None:
        configured = self.table.settings.partition_column
        if configured:
            column = self.table.column(configured)
            if column is None or column.type.cursor_kind is None:
                raise ConfigError(f"tables[{self._name}].partition_column = {configured!r} is "
                                  "not an integer or timestamp column",
                                  field="source.config.tables")
            return configured
        if len(self.primary_key) == 1:
            column = self.table.column(self.primary_key[0])
            if column is not None and column.type.cursor_kind is not None:
                return column.name
        return None  # no usable column: one partition

    def _boundary_key(self) -> str | None:
        """The key column the tie rule's keys come from: a single integer or text key."""
        if len(self.primary_key) != 1:
            return None
        column = self.table.column(self.primary_key[0])
        if column is None or column.type.schema.get("type") not in (
                ["integer", "null"], ["string", "null"]) or "format" in column.type.schema:
            return None
        return column.name

    # ------------------------------------------------------------------ reading

    def predicate(self, params: Mapping[str, Any]) -> str:
        """The ``WHERE`` text of one partition (:mod:`._sql` renders every value)."""
        if "start" not in params:
            return range_predicate(Dialect(self._settings.url), dict(params))
        assert self._cursor_column is not None and self.state_converter is not None
        dialect = Dialect(self._settings.url)
        column = self._cursor_column.name
        if params.get("cursor_null"):
            return f"{dialect.name(column)} IS NULL"
        parse = self.state_converter.parse
        low = None if params["start"] == self.cursor_start() else parse(params["start"])
        condition = dialect.range(column, low, parse(params["end"]))
        key = self._boundary_key()
        if key is not None and params.get(TOP_KEYS) is not None:
            keys = key_literal_values(params[TOP_KEYS])
            condition += (f" AND NOT ({dialect.name(column)} = "
                          f"{dialect.literal(parse(params[TOP_AT]))} AND NOT "
                          f"{dialect.in_list(key, keys)})")
        if key is not None and SEEN_AT in params:
            keys = key_literal_values(params[SEEN_KEYS])
            condition += (f" AND NOT ({dialect.name(column)} = "
                          f"{dialect.literal(parse(params[SEEN_AT]))} AND "
                          f"{dialect.in_list(key, keys)})")
        return condition

    def spark_frame(self, spark: SparkSession, partitions: Sequence[Partition]) -> DataFrame:
        """One Spark JDBC read, one ``predicates`` entry (one Spark partition) per partition."""
        settings = self._settings
        predicates = [self.predicate(p.params) for p in partitions]
        try:
            frame = reader(spark, settings).jdbc(settings.url, self.table.relation,
                                                 predicates=predicates)
        except (ConnectorError, ConfigError):
            raise
        except Exception as exc:
            raise explain(exc, settings, stream=self._name) from exc
        unmapped = {c.name for c in self.table.columns if not c.type.mapped}
        if not unmapped:
            return frame
        return frame.select([frame[n].cast("string").alias(n) if n in unmapped else frame[n]
                             for n in frame.columns])

    def read(self, partition: Partition) -> Iterator[RecordOrBatch]:
        raise ConnectorError(f"stream {self._name!r} is read by Spark's JDBC reader "
                             "(spark_frame), not record by record", stream=self._name)


class JdbcSource(Source):
    """Tables of one database, through its JDBC driver (see the module docs)."""

    type_name = "jdbc"
    needs_spark = True

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        self._settings = parse_model(JdbcConfig, config, "jdbc")
        self._tables: list[TableInfo] | None = None

    @classmethod
    def spec(cls) -> dict[str, Any]:
        return model_spec(JdbcConfig)

    def tables(self) -> list[TableInfo]:
        if self._tables is None:
            try:
                self._tables = discover_tables(_spark(), self._settings)
            except (ConnectorError, ConfigError):
                raise
            except Exception as exc:
                raise explain(exc, self._settings) from exc
            for table in self._tables:
                if table.unmapped:
                    log.warning("%s: Spark's types have no mapping for %s; carried as text",
                                table.settings.name, ", ".join(table.unmapped))
        return self._tables

    def streams(self) -> list[Stream]:
        return [JdbcStream(self._settings, t) for t in self.tables()]

    def check(self) -> None:
        """Fetch the driver, connect (refused credentials: exit code 3), read each table's
        columns."""
        try:
            with connection(_spark(), self._settings) as conn:
                product = conn.getMetaData().getDatabaseProductName()
            log.info("connected to %s", product)
        except (ConnectorError, ConfigError):
            raise
        except Exception as exc:
            raise explain(exc, self._settings) from exc
        self.tables()

