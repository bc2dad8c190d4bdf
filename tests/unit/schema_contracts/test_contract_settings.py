"""The ``schema_contract`` setting: shorthand, per kind, the stream's over the connection's,
and a wrong value named with the shape expected."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from headwater.config import load_connection
from headwater.config._schema_contract import SchemaContract
from headwater.errors import SpecValidationError


def _load(tmp_path: Path, text: str) -> object:
    path = tmp_path / "conn.yaml"
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return load_connection(path, env={})


def test_a_string_applies_to_every_kind_and_a_stream_replaces_the_connections(
        tmp_path: Path) -> None:
    connection = _load(tmp_path, """\
        source: {type: sample}
        schema_contract: freeze
        streams:
          - name: users
          - name: orders
            schema_contract: {new_columns: rescue, type_changes: discard_value}
        """)
    assert connection.schema_contract_of("users") == SchemaContract(  # type: ignore[attr-defined]
        new_tables="freeze", new_columns="freeze", type_changes="freeze")
    # A stream's contract is whole: what it leaves out evolves, not the connection's freeze.
    assert connection.schema_contract_of("orders") == SchemaContract(  # type: ignore[attr-defined]
        new_tables="evolve", new_columns="rescue", type_changes="discard_value")


def test_no_setting_evolves_everything(tmp_path: Path) -> None:
    connection = _load(tmp_path, "source: {type: sample}\n")
    assert connection.schema_contract_of("users").evolves  # type: ignore[attr-defined]


@pytest.mark.parametrize(("setting", "field", "expected"), [
    ("schema_contract: frozen", "schema_contract",
     "expected one of evolve, freeze, discard_row, discard_value, or a mapping"),
    ("schema_contract: {new_tables: rescue}", "schema_contract.new_tables",
     "expected 'evolve', 'freeze', 'discard_row' or 'discard_value'"),
    ("schema_contract: {new_column: freeze}", "schema_contract.new_column",
     "unknown field (did you mean 'new_columns'?"),
])
def test_a_wrong_value_names_the_field_and_the_shape_expected(
        tmp_path: Path, setting: str, field: str, expected: str) -> None:
    path = tmp_path / "conn.yaml"
    path.write_text(f"source: {{type: sample}}\n{setting}\n", encoding="utf-8")
    with pytest.raises(SpecValidationError) as info:
        load_connection(path, env={})
    problems = dict(info.value.problems)
    assert field in problems, problems
    assert expected in problems[field], problems[field]
