"""The jdbc source's SQL text and types, without a database: every value Spark's JDBC reader
gets from Headwater is rendered by ``_sql.Dialect``, so its edges are checked here."""

from __future__ import annotations

import datetime as dt

import pytest
from pyspark.sql import types as T

from headwater.config import secret_values
from headwater.connectors.jdbc import JdbcSource, JdbcStream
from headwater.connectors.jdbc._catalog import ColumnInfo, TableInfo
from headwater.connectors.jdbc._config import JdbcConfig, TableSettings, driver_class_for
from headwater.connectors.jdbc._partitioning import range_predicate
from headwater.connectors.jdbc._sql import Dialect
from headwater.connectors.jdbc._types import map_spark_type
from headwater.errors import SpecValidationError

PG = "jdbc:postgresql://db:5432/shop"
MARIA = "jdbc:mariadb://db:3306/shop"


def test_literals_quote_text_and_write_timestamps_in_utc() -> None:
    pg, maria = Dialect(PG), Dialect(MARIA)
    assert pg.literal(42) == "42"
    assert pg.literal("it's") == "'it''s'"
    assert pg.literal("a\\b") == "'a\\b'"
    assert maria.literal("a\\' OR 1=1 --") == "'a\\\\'' OR 1=1 --'"  # no way out of the quotes
    at = dt.datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    assert pg.literal(at) == "TIMESTAMP '2026-01-02 01:04:05.000006'"
    assert Dialect("jdbc:sqlserver://db").literal(at) == \
        "CAST('2026-01-02 01:04:05.000006' AS DATETIME2)"
    with pytest.raises(TypeError):
        pg.literal(True)
    with pytest.raises(TypeError):
        pg.literal(1.5)


def test_names_are_quoted_as_spark_dialects_quote_them() -> None:
    assert Dialect(PG).name('we"ird') == '"we""ird"'
    assert Dialect(MARIA).name("we`ird") == "`we``ird`"
    assert Dialect(PG).in_list("id", []) == "1 = 0"


def test_the_first_key_range_holds_the_nulls_and_the_last_is_open() -> None:
    pg = Dialect(PG)
    assert range_predicate(pg, {}) == "1 = 1"
    assert range_predicate(pg, {"column": "id", "lo": None, "hi": 10}) == \
        '("id" < 10 OR "id" IS NULL)'
    assert range_predicate(pg, {"column": "id", "lo": 10, "hi": None}) == '"id" >= 10'
    assert range_predicate(pg, {"column": "at", "lo": "2026-01-01T00:00:00+00:00",
                                "hi": "2026-02-01T00:00:00+00:00"}) == \
        "\"at\" >= TIMESTAMP '2026-01-01 00:00:00.000000' AND " \
        "\"at\" < TIMESTAMP '2026-02-01 00:00:00.000000'"


def _stream(key_type: T.DataType | None = None) -> JdbcStream:
    settings = JdbcConfig.model_validate({
        "url": PG, "driver": "org.postgresql:postgresql:42.7.4",
        "tables": [{"name": "events", "cursor_field": "n"}]})
    table = TableInfo(settings=TableSettings(name="events", cursor_field="n"),
                      columns=(ColumnInfo("id", map_spark_type(key_type or T.LongType())),
                               ColumnInfo("n", map_spark_type(T.IntegerType()))),
                      primary_key=("id",))
    return JdbcStream(settings, table)


def test_cursor_windows_read_only_the_keys_the_plan_listed_at_the_top_value() -> None:
    stream = _stream()
    first = stream.predicate({"start": stream.cursor_start(), "end": 11, "top_at": 10,
                              "top_keys": ["1", "2"]})
    assert first == '"n" < 11 AND NOT ("n" = 10 AND NOT "id" IN (1, 2))'
    again = stream.predicate({"start": 10, "end": 21, "seen_at": 10, "seen_keys": ["1", "2"]})
    assert again == '"n" >= 10 AND "n" < 21 AND NOT ("n" = 10 AND "id" IN (1, 2))'
    assert stream.predicate({"start": 0, "end": 0, "cursor_null": True}) == '"n" IS NULL'
    text = _stream(T.StringType()).predicate({"start": 0, "end": 5, "top_at": 4,
                                              "top_keys": ['"a\'b"']})
    assert text.endswith("NOT (\"n\" = 4 AND NOT \"id\" IN ('a''b'))")


def test_spark_types_map_to_the_table_types_and_cursor_candidates() -> None:
    assert map_spark_type(T.IntegerType()).cursor_kind == "integer"
    assert map_spark_type(T.DecimalType(10, 0)).schema == {"type": ["integer", "null"]}
    assert map_spark_type(T.DecimalType(12, 2)).schema["precision"] == 12
    assert map_spark_type(T.TimestampType()).cursor_kind == "datetime"
    assert map_spark_type(T.TimestampNTZType()).schema["airbyte_type"] == \
        "timestamp_without_timezone"
    assert map_spark_type(T.ArrayType(T.LongType())).schema["items"] == \
        {"type": ["integer", "null"]}
    odd = map_spark_type(T.MapType(T.StringType(), T.StringType()))
    assert not odd.mapped and odd.schema["type"] == ["string", "null"]


def test_config_names_the_driver_and_keeps_the_password_secret() -> None:
    assert driver_class_for(MARIA) == "org.mariadb.jdbc.Driver"
    assert driver_class_for("jdbc:oracle:thin:@db:1521/x") == "oracle.jdbc.OracleDriver"
    assert driver_class_for("jdbc:unknown://x") is None
    config = {"url": PG, "driver": "org.postgresql:postgresql:42.7.4", "password": "pw-1",
              "tables": [{"name": "t"}]}
    assert secret_values(JdbcSource.spec(), config) == ["pw-1"]
    assert "pw-1" not in repr(JdbcSource(config)._settings)
    for wrong in ("postgresql-42.jar", "org.postgresql:postgresql:42.7.4' --"):
        with pytest.raises(SpecValidationError):  # coordinates only: they go into ADD JAR
            JdbcSource({**config, "driver": wrong})
    with pytest.raises(SpecValidationError):
        JdbcSource({**config, "tables": [{"name": "t", "table": "t", "query": "SELECT 1"}]})


def test_a_split_column_beside_a_cursor_is_refused() -> None:
    # Read in windows of its cursor, the stream was never split on it: it was ignored.
    tables = [{"name": "orders", "cursor_field": "updated_at", "partition_column": "id"}]
    with pytest.raises(SpecValidationError) as caught:
        JdbcSource({"url": PG, "driver": "org.postgresql:postgresql:42.7.4", "tables": tables})
    [(field, problem)] = caught.value.problems
    assert field == "source.config.tables.0"
    assert "partition_column: the stream is read in windows of its cursor_field" in problem
    TableSettings(name="orders", partition_column="id")  # a full refresh split on it: taken

