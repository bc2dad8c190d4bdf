"""Expectations in the connection file: an expression that does not parse, or names a
column the stream lacks, is a config error naming the stream and the expression,
found before any data is read (no Spark here)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from headwater.config import load_connection
from headwater.engine.connection import build_source, resolve_streams
from headwater.errors import ConfigError, SpecValidationError
from headwater.expectations import ExpectationConfig


def _connection(tmp_path: Path, *expectations: dict[str, str]) -> Path:
    path = tmp_path / "shop.yaml"
    path.write_text(textwrap.dedent(f"""\
        source: {{type: sample, config: {{users: 10}}}}
        destination: {{type: delta, config: {{path: {tmp_path / 'lake'}}}}}
        streams:
          - name: users
            expectations: {json.dumps(list(expectations))}
        """), encoding="utf-8")
    return path


@pytest.mark.parametrize("expr", ["amount >= ", "email LIKE", "(a > 1", "select 1",
                                  "sum(amount) > 0", "a > 1; b > 2"])
def test_an_expression_that_does_not_parse_is_a_config_error_naming_stream_and_expression(
        tmp_path: Path, expr: str) -> None:
    path = _connection(tmp_path, {"name": "broken", "expr": expr, "action": "drop"})

    with pytest.raises(SpecValidationError) as info:
        load_connection(path, env={})

    ((field, message),) = info.value.problems
    assert isinstance(info.value, ConfigError)
    assert field == "streams[0].expectations"
    assert "stream 'users'" in message and "'broken'" in message and repr(expr) in message


def test_a_column_the_stream_does_not_have_is_a_config_error_before_any_read(
        tmp_path: Path) -> None:
    connection = load_connection(_connection(
        tmp_path, {"name": "adult", "expr": "age >= 18", "action": "warn"},
        {"name": "typo", "expr": "emial LIKE '%@%'", "action": "drop"}), env={})

    with pytest.raises(ConfigError) as info:
        resolve_streams(build_source(connection), connection)

    message = str(info.value)
    assert "stream 'users'" in message and "'typo'" in message
    assert "\"emial LIKE '%@%'\"" in message and "'emial'" in message
    assert info.value.context["field"] == "streams[0].expectations"


def test_known_columns_nested_fields_lambdas_and_metadata_columns_pass(tmp_path: Path) -> None:
    connection = load_connection(_connection(
        tmp_path, {"name": "adult", "expr": "AGE >= 18 AND _hw_run_id IS NOT NULL"},
        {"name": "mail", "expr": "exists(array(email), x -> x LIKE '%@%')",
         "action": "quarantine"}), env={})

    (stream,) = resolve_streams(build_source(connection), connection)

    assert stream.name == "users"


@pytest.mark.parametrize("destination", ["kafka", "delta", "iceberg", "files", "postgres"])
def test_quarantine_where_the_destination_has_no_quarantine_table_is_a_config_error(
        tmp_path: Path, destination: str) -> None:
    """Every table destination keeps a quarantine table; Kafka refuses it."""
    connection = load_connection(_connection(
        tmp_path, {"name": "mail", "expr": "email IS NOT NULL", "action": "quarantine"}), env={})
    connection = connection.model_copy(update={"destination": connection.destination.model_copy(
        update={"type": destination})})

    if destination != "kafka":
        (stream,) = resolve_streams(build_source(connection), connection)
        assert stream.name == "users"
        return
    with pytest.raises(ConfigError, match=f"the {destination} destination has no quarantine"):
        resolve_streams(build_source(connection), connection)


def test_names_must_be_identifiers_and_unique(tmp_path: Path) -> None:
    with pytest.raises(SpecValidationError) as info:
        load_connection(_connection(tmp_path, {"name": "same", "expr": "age > 0"},
                                    {"name": "same", "expr": "age < 200"}), env={})
    assert "'same' is listed more than once" in str(info.value)
    with pytest.raises(ValueError, match="letters, digits"):
        ExpectationConfig(name="has email", expr="email IS NOT NULL")
    assert ExpectationConfig(name="ok", expr="true").action == "warn"
