"""The PostgreSQL destination without a server: its config, the values it notes on the
executors before COPY, its error lines, and the example connection that uses it."""

from __future__ import annotations

import datetime as dt
import decimal
import json
from pathlib import Path

import pyarrow as pa
import pytest
from typer.testing import CliRunner

from headwater.cli.app import app
from headwater.config import secret_values
from headwater.destinations import get_destination_class
from headwater.destinations.postgres import PostgresDestination
from headwater.destinations.postgres._config import parse, spec
from headwater.destinations.postgres._fit import (
    END_DATE_DAYS,
    MIN_DATE_DAYS,
    MIN_TIMESTAMP_US,
    Column,
    fit_batch,
)
from headwater.errors import SpecValidationError
from headwater.table_schema import NOTES_TYPE

REPO = Path(__file__).resolve().parents[4]
BASE = {"database": "shop", "username": "loader", "password": "s3cret-pw"}


def test_registered_and_its_secrets_are_marked() -> None:
    assert get_destination_class("postgres") is PostgresDestination
    secrets = secret_values(spec(), {**BASE, "url": "postgresql://a:b@h/d"})
    assert set(secrets) == {"s3cret-pw", "postgresql://a:b@h/d"}


def test_a_url_gives_every_field_and_a_bad_field_is_named() -> None:
    settings = parse({"url": "postgresql://bob:p%40ss@db:5433/shop?sslmode=require",
                      "schema": "raw"})
    assert (settings.host, settings.port, settings.database, settings.username,
            settings.sslmode, settings.schema_name) == ("db", 5433, "shop", "bob", "require",
                                                        "raw")
    assert settings.password is not None and settings.password.get_secret_value() == "p@ss"
    with pytest.raises(SpecValidationError) as raised:
        parse({"port": 70000, **BASE})
    assert raised.value.problems[0][0] == "destination.config.port"
    with pytest.raises(SpecValidationError) as raised:
        parse({"username": "x"})
    assert [p[0] for p in raised.value.problems] == ["destination.config.database"]


def test_namespace_names_the_server_not_the_credentials() -> None:
    destination = PostgresDestination({**BASE, "host": "db.internal", "port": 6543})
    assert destination.dataset_namespace() == "postgres://db.internal:6543/shop"
    assert destination.dataset_name("users", destination.dataset_namespace()) == "public.users"


def test_the_example_connection_validates() -> None:
    result = CliRunner().invoke(app, ["validate", str(REPO / "examples" /
                                                      "postgres-destination.yaml")],
                                env={"PG_PASSWORD": "example"})
    assert result.exit_code == 0, result.output


def _notes(batch: pa.RecordBatch) -> list[list[dict[str, str]] | None]:
    return [None if t is None else json.loads(t) for t in batch.column("_hw_notes").to_pylist()]


NOTES = Column("_hw_notes", "jsonb")


def test_text_with_a_nul_character_is_nulled_and_noted() -> None:
    batch = pa.record_batch({"name": ["ok", "a\x00b", None],
                             "_hw_notes": pa.nulls(3, NOTES_TYPE)})
    fitted, rejected = fit_batch(batch, [Column("name", "text"), NOTES])
    assert fitted.column("name").to_pylist() == ["ok", None, None]
    assert rejected == 1
    notes = _notes(fitted)
    assert notes[0] is None and notes[2] is None
    assert notes[1] == [{"field": "name", "value": "a\\u0000b",
                         "reason": "PostgreSQL text cannot hold the NUL character"}]


def test_json_with_the_nul_escape_is_nulled_unless_the_backslash_is_escaped() -> None:
    texts = ['{"a":"x\\u0000"}', '{"a":"x\\\\u0000"}', '{"a":1}']
    batch = pa.record_batch({"doc": texts, "_hw_notes": pa.nulls(3, NOTES_TYPE)})
    fitted, rejected = fit_batch(batch, [Column("doc", "jsonb", json_text=True), NOTES])
    assert fitted.column("doc").to_pylist() == [None, texts[1], texts[2]]
    assert rejected == 1


def test_nested_values_become_json_with_exact_decimals() -> None:
    kind = pa.struct([("amount", pa.decimal128(38, 18)), ("at", pa.timestamp("us", tz="UTC"))])
    value = {"amount": decimal.Decimal("12345678901234567890.123456789012345678"),
             "at": dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)}
    batch = pa.record_batch({"s": pa.array([value, None], kind),
                             "_hw_notes": pa.nulls(2, NOTES_TYPE)})
    fitted, rejected = fit_batch(batch, [Column("s", "jsonb"), NOTES])
    text = fitted.column("s")[0].as_py()
    assert '"amount":12345678901234567890.123456789012345678' in text
    assert '"at":"2026-01-02T03:04:05Z"' in text
    assert fitted.column("s")[1].as_py() is None and rejected == 0


def test_times_outside_postgresql_are_nulled_and_noted() -> None:
    stamps = pa.array([MIN_TIMESTAMP_US - 1, MIN_TIMESTAMP_US, 0], pa.int64()).cast(
        pa.timestamp("us", tz="UTC"))
    days = pa.array([MIN_DATE_DAYS - 1, END_DATE_DAYS, 0], pa.int32()).cast(pa.date32())
    batch = pa.record_batch({"at": stamps, "day": days, "_hw_notes": pa.nulls(3, NOTES_TYPE)})
    fitted, rejected = fit_batch(batch, [Column("at", "timestamp with time zone"),
                                         Column("day", "date"), NOTES])
    assert fitted.column("at").null_count == 1 and fitted.column("at")[1].is_valid
    assert fitted.column("day").to_pylist()[2] == dt.date(1970, 1, 1)
    assert fitted.column("day").null_count == 2
    assert rejected == 2
    assert [n["field"] for n in _notes(fitted)[0] or []] == ["at", "day"]


def test_text_longer_than_a_varchar_is_noted_and_engine_notes_are_kept() -> None:
    engine_note = [{"field": "age", "reason": "not an integer", "value": "x"}]
    batch = pa.record_batch({"code": ["abc", "abcdef"],
                             "_hw_notes": pa.array([engine_note, None], NOTES_TYPE)})
    fitted, rejected = fit_batch(batch, [Column("code", "character varying(4)", max_length=4),
                                         NOTES])
    assert fitted.column("code").to_pylist() == ["abc", None]
    assert rejected == 2
    notes = _notes(fitted)
    assert notes[0] == engine_note and notes[1] is not None and notes[1][0]["field"] == "code"

