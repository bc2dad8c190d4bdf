"""The mysql source's readers give the rows an independent reference client gives, for any rows.

Differential, against a real MariaDB: generated rows of every mapped type and its
edges (DECIMAL(65, 30) and (38, 10), BIGINT UNSIGNED to 2^64 - 1, TINYINT(1), DATETIME(6)
and TIMESTAMP(6), DATE, TIME(6) to +-838 h, YEAR, JSON, BINARY/VARBINARY/BLOB, ENUM, SET,
BIT(10) and BIT(64), utf8mb4 text with emoji, FLOAT, DOUBLE; NULL anywhere) are
inserted with PyMySQL and read two ways:

* the reader (``MySQLStream.read`` over several key-range partitions: connectorx's
  binary protocol into Arrow), typed for the table by :func:`conform_batch` as the
  engine types it;
* the reference: PyMySQL (text protocol, pure Python) reading the same table, each
  value turned into what the table must hold (:func:`expected`) and into the
  table's Arrow type with ``pa.array``.

Change data capture is held to the same reference: generated rows inserted into a new
table are read from the binary log, as its row events are decoded
(:mod:`headwater.connectors.mysql._binlog_values`) and typed as the engine types a
stream's records.  Every row must have the same values, floats by their bits, and no
row a note.
FLOAT values are generated with six significant digits: the server's text of a
FLOAT (the reference's only view of it) has six, so the reference can know the
stored single-precision value exactly only for those.
"""

from __future__ import annotations

import datetime as dt
import decimal
import json
import struct
import uuid
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from headwater.connectors.mysql import MySQLSource
from headwater.connectors.mysql._binlog import end_of_log
from headwater.table_schema import arrow_schema_for, batch_from_records, conform_batch
from tests._mariadb import MariaDBServer

D = decimal.Decimal
UTC = dt.UTC

COLUMNS = {
    "d65": "DECIMAL(65, 30)", "d38": "DECIMAL(38, 10)", "ub": "BIGINT UNSIGNED",
    "sb": "BIGINT", "ti": "TINYINT(1)", "dtm": "DATETIME(6)", "ts": "TIMESTAMP(6) NULL",
    "dte": "DATE", "tm": "TIME(6)", "yr": "YEAR", "js": "JSON", "bin": "BINARY(4)",
    "vb": "VARBINARY(10)", "bl": "BLOB", "en": "ENUM('a', 'b c', 'ü', 'it''s')",
    "st": "SET('x', 'y', 'z')", "bt": "BIT(10)", "b64": "BIT(64)", "txt": "TEXT",
    "vc": "VARCHAR(20)", "fl": "FLOAT", "db": "DOUBLE",
}


def _scaled(digits: int, scale: int) -> st.SearchStrategy[str]:
    top = 10 ** digits - 1
    whole = st.sampled_from([top, -top, 0, 1, -1]) | st.integers(-top, top)
    # As text: a decimal in exponent form (1E-7) would be read as a double by the server.
    return whole.map(lambda n: format(D(f"{n}E-{scale}"), "f"))  # exact: no context rounding


def _time_text(micros: int) -> str:
    sign = "-" if micros < 0 else ""
    micros = abs(micros)
    seconds, fraction = divmod(micros, 1_000_000)
    hours, minutes = seconds // 3600, seconds // 60 % 60
    return f"{sign}{hours:02d}:{minutes:02d}:{seconds % 60:02d}.{fraction:06d}"


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12) | st.sampled_from(
    ["", " ", "trailing  ", "emoji 😀🎉", "ünï", "'quote'", "back\\slash", "\x00nul"])
_MAX_TIME = (838 * 3600 + 59 * 60 + 59) * 1_000_000
_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5)
                     | st.floats(allow_nan=False, allow_infinity=False),
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=3), inner, max_size=3),
                     max_leaves=5).map(json.dumps) | st.just('{"a": 1.000000000000000000001}')
_SIX_DIGITS = st.builds(lambda m, e: float(D(f"{m}E{e}")), st.integers(-999_999, 999_999),
                        st.integers(-30, 30))

VALUES: dict[str, st.SearchStrategy[Any]] = {
    "d65": _scaled(65, 30), "d38": _scaled(38, 10),
    "ub": st.sampled_from([0, 2**63, 2**64 - 1]) | st.integers(0, 2**64 - 1),
    "sb": st.sampled_from([-(2**63), 2**63 - 1]) | st.integers(-(2**63), 2**63 - 1),
    "ti": st.integers(-128, 127),
    "dtm": st.datetimes(dt.datetime(1000, 1, 1), dt.datetime(9999, 12, 31, 23, 59, 59, 999999)),
    "ts": st.datetimes(dt.datetime(1970, 1, 1, 0, 0, 1),
                       dt.datetime(2038, 1, 19, 3, 14, 7, 999999)),
    "dte": st.dates(dt.date(1000, 1, 1), dt.date(9999, 12, 31)),
    "tm": st.integers(-_MAX_TIME - 999_999, _MAX_TIME + 999_999).map(_time_text),
    "yr": st.sampled_from([0, 1901, 2155]) | st.integers(1901, 2155),
    "js": _JSON, "bin": st.binary(max_size=4), "vb": st.binary(max_size=10),
    "bl": st.binary(max_size=40),
    "en": st.sampled_from(["a", "b c", "ü", "it's"]),
    "st": st.sets(st.sampled_from(["x", "y", "z"])).map(lambda s: ",".join(sorted(s))),
    "bt": st.integers(0, 2**10 - 1), "b64": st.sampled_from([0, 2**64 - 1])
    | st.integers(0, 2**64 - 1),
    "txt": _TEXT, "vc": _TEXT.map(lambda t: t[:20]), "fl": _SIX_DIGITS,
    "db": st.floats(allow_nan=False, allow_infinity=False, allow_subnormal=False),
}
ROWS = st.lists(st.fixed_dictionaries({name: st.none() | values
                                       for name, values in VALUES.items()}),
                min_size=1, max_size=7)


@pytest.fixture(scope="module")
def database(mariadb_server: MariaDBServer) -> Iterator[str]:
    with mariadb_server.database() as name:
        yield name


def _insert(server: MariaDBServer, database: str, table: str,
            rows: list[dict[str, Any]]) -> None:
    columns = ", ".join(f"`{c}` {kind}" for c, kind in COLUMNS.items())
    names = ["_row", *COLUMNS]
    connection = server.connect(database)
    try:
        with connection.cursor() as cursor:
            cursor.execute(f"CREATE TABLE `{table}` (_row INT PRIMARY KEY, {columns})")
            cursor.executemany(
                f"INSERT INTO `{table}` ({', '.join(f'`{n}`' for n in names)}) VALUES "
                f"({', '.join(['%s'] * len(names))})",
                [[index, *(row[c] for c in COLUMNS)] for index, row in enumerate(rows)])
    finally:
        connection.close()


def _comparable(value: Any) -> Any:
    if isinstance(value, float):
        return ("float", struct.pack(">d", value))
    if isinstance(value, D):
        return ("decimal", value.as_tuple())
    return value


def assert_same(got: list[dict[str, Any]], want: list[dict[str, Any]], count: int) -> None:
    """Both readers' rows, value by value (floats by their bits)."""
    assert len(got) == count
    for mine, theirs in zip(got, want, strict=True):
        differ = {k: (v, theirs[k]) for k, v in mine.items()
                  if _comparable(v) != _comparable(theirs[k])}
        assert not differ, differ


def reader_rows(server: MariaDBServer, database: str, table: str
                ) -> tuple[list[dict[str, Any]], pa.Schema]:
    """The reader's rows over several partitions, typed as the engine types them."""
    source = MySQLSource(server.source_config(database, rows_per_partition=2, tables=[table]))
    (stream,) = source.streams()
    schema = arrow_schema_for(stream.json_schema())
    rows: list[dict[str, Any]] = []
    partitions = stream.partitions(None)
    for partition in partitions:
        for batch in stream.read(partition):
            assert isinstance(batch, pa.RecordBatch)
            columns, notes = conform_batch(batch, schema)
            assert not notes.any(), notes.to_lists()
            rows += pa.Table.from_arrays(columns, schema=schema).to_pylist()
    return sorted(rows, key=lambda r: r["_row"]), schema


def expected(name: str, value: Any) -> Any:
    """PyMySQL's value of a column as the table must hold it."""
    if value is None:
        return None
    if name == "d65":
        return format(value, "f")  # wider than a decimal(38): the server's text
    if name in ("ub", "b64"):
        value = int.from_bytes(value, "big") if isinstance(value, bytes) else value
        return D(value)
    if name == "bt":
        return int.from_bytes(value, "big")
    if name == "fl":
        return float(np.float32(value))  # the stored single, as the table widens it
    if name == "ts":
        return value.replace(tzinfo=UTC)  # the session's time zone is UTC
    if name == "tm":
        micros = value // dt.timedelta(microseconds=1)
        return _time_text(micros)
    return value


def reference_rows(server: MariaDBServer, database: str, table: str,
                   schema: pa.Schema) -> list[dict[str, Any]]:
    connection = server.connect(database)
    try:
        with connection.cursor() as cursor:
            cursor.execute(f"SELECT * FROM `{table}` ORDER BY _row")
            names = [d[0] for d in cursor.description]
            raw = cursor.fetchall()
    finally:
        connection.close()
    values = {n: [expected(n, row[i]) for row in raw] for i, n in enumerate(names)}
    columns = [pa.array(values[field.name], type=field.type) for field in schema]
    return pa.Table.from_arrays(columns, schema=schema).to_pylist()


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture, HealthCheck.data_too_large])
@example(rows=[{name: None for name in VALUES}])
@given(rows=ROWS)
def test_the_reader_reads_what_pymysql_reads(mariadb_server: MariaDBServer, database: str,
                                             rows: list[dict[str, Any]]) -> None:
    table = f"t_{uuid.uuid4().hex[:10]}"
    _insert(mariadb_server, database, table, rows)
    try:
        got, schema = reader_rows(mariadb_server, database, table)
        want = reference_rows(mariadb_server, database, table, schema)
        assert_same(got, want, len(rows))
    finally:
        mariadb_server.execute(f"DROP TABLE `{database}`.`{table}`")


# --------------------------------------------------------------------------- the binary log


def binlog_rows(server: MariaDBServer, database: str, table: str, position: str,
                schema: pa.Schema) -> list[dict[str, Any]]:
    """The rows change data capture decodes from the binary log since ``position``,
    typed as the engine types a stream's records (:func:`batch_from_records`)."""
    source = MySQLSource(server.source_config(database, tables=[table],
                                              replication_method="cdc"))
    (stream,) = source.streams()
    (partition,) = stream.partitions({"binlog": position})
    records = [dict(r) for r in stream.read(partition)]  # type: ignore[arg-type]
    assert all(r.pop("_hw_deleted") is False and r.pop("_mysql_pos") and r.pop("_mysql_gtid")
               for r in records)
    columns, notes = batch_from_records(records, schema)
    assert not notes.any(), notes.to_lists()
    return sorted(pa.Table.from_arrays(columns, schema=schema).to_pylist(),
                  key=lambda r: r["_row"])


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow,
          HealthCheck.function_scoped_fixture, HealthCheck.data_too_large])
@example(rows=[{name: None for name in VALUES}])
@given(rows=ROWS)
def test_the_binlog_decoder_reads_what_pymysql_reads(mariadb_server: MariaDBServer,
                                                     database: str,
                                                     rows: list[dict[str, Any]]) -> None:
    """The rows inserted, as the binary log's row events carry them, decoded by change
    data capture (``_binlog_values``), against PyMySQL reading the table."""
    table = f"b_{uuid.uuid4().hex[:10]}"
    connection = mariadb_server.connect(database)
    try:
        position = str(end_of_log(connection))
    finally:
        connection.close()
    _insert(mariadb_server, database, table, rows)
    try:
        source = MySQLSource(mariadb_server.source_config(database, tables=[table]))
        (stream,) = source.streams()
        schema = arrow_schema_for(stream.json_schema())
        got = binlog_rows(mariadb_server, database, table, position, schema)
        want = reference_rows(mariadb_server, database, table, schema)
        assert_same(got, want, len(rows))
    finally:
        mariadb_server.execute(f"DROP TABLE `{database}`.`{table}`")
