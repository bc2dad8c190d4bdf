"""The postgres source's readers give the rows an independent reference gives, for any table.

Differential, against a real PostgreSQL: generated tables (:mod:`._pg_cases`: every
mapped type, its edges, NULL everywhere) are read three ways and typed for the
table as the engine types them:

* the snapshot reader (``PostgresStream.read``: ADBC's binary COPY into Arrow),
  typed by :func:`conform_batch`;
* change data capture's decoder (``_cdc._Decoder``) fed PostgreSQL's text output
  of the same values as pgoutput sends them, typed by :func:`batch_from_records`;
* the reference: psycopg reading the same table, its own binary loaders for
  the columns the table types (exact floats, dates, lists), PostgreSQL's text
  for the columns the table keeps as text, turned into the table's Arrow type
  with ``pa.array``.  A value the table cannot hold (psycopg refuses a date or
  timestamp outside years 1 to 9999 or infinite, a multi-dimensional array
  where the column holds lists, a decimal NaN) must land as null with a note
  holding PostgreSQL's text of it: "lose nothing".

Every row must have the same values (floats by their bits, dates and date-times
as their numbers) and the same notes (field and value) all three ways.  The last
test lands generated tables in Delta through a real sync and compares the table
with the reference.
"""

from __future__ import annotations

import struct
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pyarrow as pa
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from psycopg.adapt import Transformer
from psycopg.pq import Format

from headwater.connectors.postgres import PostgresSource
from headwater.connectors.postgres._cdc import (
    DELETED_COLUMN,
    LSN_COLUMN,
    _Decoder,
    text_transformer,
)
from headwater.connectors.postgres._source import PostgresStream
from headwater.connectors.postgres._types import SESSION_SETTINGS
from headwater.metadata_store import SUCCEEDED_STATUSES
from headwater.table_schema import (
    META_NAMES,
    arrow_schema_for,
    batch_from_records,
    conform_batch,
)
from tests._postgres import PostgresServer
from tests.integration._connections import engine
from tests.integration.connectors.postgres._pg_cases import (
    KINDS,
    TYPES_DDL,
    Table,
    tables,
)
from tests.integration.connectors.postgres.test_postgres_source import write_connection
from tests.unit.connectors._json_cases import column_values, comparable, differential

#: One row as compared: (``_row``, values by column, sorted (field, value) of its notes).
Row = tuple[int, dict[str, Any], list[tuple[str, str]]]


@pytest.fixture(scope="module")
def database(postgres_server: PostgresServer) -> Iterator[str]:
    """One database for the module's generated tables (each dropped after its example)."""
    with postgres_server.database() as name:
        with psycopg.connect(postgres_server.database_url(name), autocommit=True) as conn:
            conn.execute(TYPES_DDL)
        yield name


def _connect(server: PostgresServer, database: str) -> psycopg.Connection[Any]:
    conn = psycopg.connect(server.database_url(database), autocommit=True)
    for setting, value in SESSION_SETTINGS.items():
        conn.execute("SELECT set_config(%s, %s, false)", [setting, value])
    return conn


def _stream(server: PostgresServer, database: str, name: str) -> PostgresStream:
    source = PostgresSource(server.source_config(database, rows_per_partition=2))
    (stream,) = [s for s in source.streams() if s.stream_name == name]
    assert isinstance(stream, PostgresStream)
    return stream


def _rows(columns: list[pa.Array], notes: list[list[dict[str, str]]],
          schema: pa.Schema) -> list[Row]:
    """Typed columns and their rows' notes as comparable rows."""
    assert [c.type for c in columns] == schema.types
    values = [column_values(c) for c in columns]
    rows = []
    for index, row_notes in enumerate(notes):
        assert all(note["reason"] for note in row_notes), row_notes
        record = {field.name: comparable(column[index])
                  for field, column in zip(schema, values, strict=True)}
        rows.append((record["_row"], record,
                     sorted((note["field"], note["value"]) for note in row_notes)))
    return sorted(rows, key=lambda row: row[0])


# --------------------------------------------------------------------------- the three ways


def copy_rows(stream: PostgresStream, schema: pa.Schema) -> list[Row]:
    """The snapshot reader's batches, typed for the table as the engine types them."""
    stream.lands_in(schema)
    rows: list[Row] = []
    for partition in stream.partitions(None):
        for batch in stream.read(partition):
            assert isinstance(batch, pa.RecordBatch)
            columns, notes = conform_batch(batch, schema)
            rows += _rows(columns, notes.to_lists(), schema)
    return sorted(rows, key=lambda row: row[0])


def _message_tuple(values: list[bytes | None]) -> bytes:
    out = struct.pack(">h", len(values))
    for value in values:
        out += b"n" if value is None else b"t" + struct.pack(">i", len(value)) + value
    return out


def cdc_rows(conn: psycopg.Connection[Any], stream: PostgresStream, name: str,
             schema: pa.Schema) -> list[Row]:
    """Change data capture's decoder fed the rows as pgoutput sends inserts: a relation
    message (each column's type OID, a domain's own) and PostgreSQL's text of each value."""
    attributes = conn.execute(
        "SELECT attname, atttypid, atttypmod FROM pg_attribute WHERE attrelid = %s::regclass "
        "AND attnum > 0 AND NOT attisdropped ORDER BY attnum", [f'"{name}"']).fetchall()
    relation = (b"R" + struct.pack(">I", 1) + b"public\0" + name.encode() + b"\0d"
                + struct.pack(">h", len(attributes))
                + b"".join(b"\0" + a.encode() + b"\0" + struct.pack(">Ii", oid, mod)
                           for a, oid, mod in attributes))
    decoder = _Decoder(stream.table)
    decoder.transformer = text_transformer(conn)
    assert decoder.feed(1, relation) == []
    text = conn.execute(f'SELECT * FROM "{name}" ORDER BY _row').pgresult
    assert text is not None
    records = []
    for row in range(text.ntuples):
        values = [text.get_value(row, col) for col in range(text.nfields)]
        [found] = decoder.feed(2, b"I" + struct.pack(">I", 1) + b"N" + _message_tuple(values))
        assert found.pop(DELETED_COLUMN) is False
        found.pop(LSN_COLUMN)
        records.append(found)
    columns, notes = batch_from_records(records, schema)
    return _rows(columns, notes.to_lists(), schema)


def reference_rows(conn: psycopg.Connection[Any], name: str, schema: pa.Schema) -> list[Row]:
    """psycopg's reading of the table, as the values the table must hold (module docs)."""
    query = f'SELECT * FROM "{name}" ORDER BY _row'
    text = conn.execute(query).pgresult
    binary = conn.cursor(binary=True).execute(query).pgresult
    assert text is not None and binary is not None
    loaders = Transformer(conn)
    names = [text.fname(col).decode() for col in range(text.nfields)]
    assert names == schema.names
    values: dict[str, list[Any]] = {n: [] for n in names}
    notes: list[list[dict[str, str]]] = [[] for _ in range(text.ntuples)]
    for col, field in enumerate(schema):
        for row in range(text.ntuples):
            raw_text, raw = text.get_value(row, col), binary.get_value(row, col)
            value = _expected(field.type, raw_text, raw, binary.ftype(col), loaders)
            if value is _MISFIT:
                assert raw_text is not None
                notes[row].append({"field": field.name, "reason": "misfit",
                                   "value": raw_text.decode()})
                value = None
            values[field.name].append(value)
    columns = [pa.array(values[field.name], type=field.type) for field in schema]
    return _rows(columns, notes, schema)


_MISFIT = object()


def _expected(target: pa.DataType, raw_text: bytes | None, raw: bytes | None, oid: int,
              loaders: Transformer) -> Any:
    """One value as the table must hold it, or :data:`_MISFIT`."""
    if raw_text is None:
        return None
    if pa.types.is_string(target):
        return raw_text.decode()  # the table keeps PostgreSQL's own text
    assert raw is not None
    try:
        value = loaders.get_loader(oid, Format.BINARY).load(raw)
    except psycopg.DataError:  # a date or time stamp Python (and Spark) cannot hold
        return _MISFIT
    if isinstance(value, list) and any(isinstance(item, list) for item in value):
        return _MISFIT  # a multi-dimensional array where the table holds a list
    try:
        pa.array([value], type=target)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):
        return _MISFIT  # numeric NaN in a decimal
    return value


# --------------------------------------------------------------------------- the tests


def check(server: PostgresServer, database: str, table: Table) -> None:
    """The three ways give the same rows (see the module docs)."""
    name = f"t_{uuid.uuid4().hex[:10]}"
    with _connect(server, database) as conn:
        table.create(conn, name)
        try:
            stream = _stream(server, database, name)
            schema = arrow_schema_for(stream.json_schema())
            expected = reference_rows(conn, name, schema)
            assert len(expected) == len(table.rows)
            assert copy_rows(stream, schema) == expected
            assert cdc_rows(conn, stream, name, schema) == expected
        finally:
            conn.execute(f'DROP TABLE "{name}"')


def _kind(ddl: str) -> Any:
    (found,) = [k for k in KINDS if k.ddl == ddl]
    return found


def _edges(ddl: str, *values: str | None) -> Table:
    return Table((_kind(ddl),), tuple((v,) for v in values))


@differential(60)
@given(tables())
@example(_edges("date", "infinity", "-infinity", "4714-11-24 BC", "5874897-12-31",
                "0001-01-01", "9999-12-31", None))
@example(_edges("timestamp", "infinity", "-infinity", "294276-12-31 23:59:59.999999",
                "10000-01-01 00:00:00", "0001-01-01 00:00:00", "9999-12-31 23:59:59.999999"))
@example(_edges("timestamptz", "infinity", "0001-01-01 00:30:00+01", "9999-12-31 23:30:00-01",
                "2024-01-02 03:04:05.000001+05:30"))
@example(_edges("moment", "-infinity", "2024-01-01 00:00:00+00"))
@example(_edges("integer[]", "{{1,2},{3,NULL}}", "[0:1]={7,8}", "{}", "{NULL}"))
@example(_edges("real", "1.1", "-0", "NaN", "-Infinity", "3.4028235e38"))
@example(_edges("real[]", "{1.1,NaN,-0}"))
@example(_edges("numeric(12, 3)", "NaN", "-0.001", "999999999.999"))
def test_copy_reader_and_cdc_read_as_the_reference(postgres_server: PostgresServer,
                                                    database: str, table: Table) -> None:
    check(postgres_server, database, table)


#: The edges Spark, Parquet and Delta meet, in every sync of the test below.
EDGES = Table(tuple(_kind(ddl) for ddl in (
    "date", "timestamp", "timestamptz", "real", "double precision", "numeric(38, 38)",
    "numeric(38, 0)", "bytea", "integer[]", "text[]", "interval")), (
    ("0001-01-01", "0001-01-01 00:00:00", "0001-01-01 00:00:00+00", "-0", "NaN",
     "0." + "9" * 38, "9" * 38, "\\x", "{}", '{"a,b","{q}","\\"",NULL,""}',
     "-1 mons 2 days -3 microseconds"),
    ("9999-12-31", "9999-12-31 23:59:59.999999", "9999-12-31 23:59:59.999999+00", "1.1",
     "-Infinity", "-0." + "0" * 37 + "1", "-" + "9" * 38, "\\x00ff", "{NULL,-2147483648}",
     "{}", "0 mons"),
    ("infinity", "-infinity", "0001-01-01 00:30:00+01", "NaN", "5e-324", "NaN", "NaN", None,
     "{{1,2},{3,4}}", "{{a},{b}}", None),
    ("1582-10-10", "2262-04-11 23:47:16.854776", "1969-12-31 23:59:59.999999+00", "3.4028235e38",
     "-0", None, "0", "\\x", "[0:1]={7,8}", None, None),
))


@pytest.mark.spark
@differential(2)
@given(st.lists(tables(max_columns=8, max_rows=8), min_size=3, max_size=3))
def test_generated_tables_land_in_delta_as_the_reference(
        spark: Any, postgres_server: PostgresServer, database: str,
        generated: list[Table]) -> None:
    """A real sync (Spark, Delta) of three generated tables and :data:`EDGES`: each Delta
    table holds the reference's rows and notes."""
    generated = [*generated, EDGES]
    names = [f"t_{uuid.uuid4().hex[:10]}" for _ in generated]
    with _connect(postgres_server, database) as conn, \
            tempfile.TemporaryDirectory(prefix="hw-pg-diff-") as folder:
        for name, table in zip(names, generated, strict=True):
            table.create(conn, name)
        try:
            streams = [{"name": n, "sync_mode": "full_refresh",
                        "destination_sync_mode": "overwrite"} for n in names]
            # A generated table may hold only misfits (every row noted): then `warned`.
            result = engine(write_connection(Path(folder), postgres_server, database, streams,
                                             rows_per_partition=3)).run()
            assert result.status in SUCCEEDED_STATUSES, result.to_dict()
            for name in names:
                schema = arrow_schema_for(_stream(postgres_server, database,
                                                  name).json_schema())
                frame = spark.read.format("delta").load(str(Path(folder) / "lake" / name))
                assert [n for n in frame.columns if n not in META_NAMES] == schema.names
                landed = frame.select(*schema.names, "_hw_notes").toArrow()
                columns = [landed.column(n).combine_chunks().cast(f.type)
                           for n, f in zip(schema.names, schema, strict=True)]
                notes = [n or [] for n in landed.column("_hw_notes").to_pylist()]
                assert _rows(columns, notes, schema) == reference_rows(conn, name, schema)
        finally:
            for name in names:
                conn.execute(f'DROP TABLE IF EXISTS "{name}"')
