"""A whole value from one ``${VAR}`` takes the type its field declares (issue: ``concurrency:
${CONC:-10}`` was refused as "expected integer, got string")."""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater.config import load_connection, validate_config
from headwater.config._interpolation import Interpolated, interpolate
from headwater.engine import build_source
from headwater.errors import SpecValidationError

SPEC = {"connectionSpecification": {
    "type": "object",
    "properties": {
        "concurrency": {"type": "integer"},
        "ratio": {"type": "number"},
        "verify": {"type": "boolean"},
        "name": {"type": "string"},
        "port": {"oneOf": [{"type": "integer"}, {"type": "null"}]},
        "nested": {"type": "object", "properties": {"retries": {"type": "integer"}}},
        "sizes": {"type": "array", "items": {"type": "integer"}},
        "labels": {"type": "object", "additionalProperties": {"type": "boolean"}},
    },
}}


def _validated(config: dict[str, object], env: dict[str, str]) -> dict[str, object]:
    return validate_config(SPEC, interpolate(config, env))


def test_whole_values_take_the_declared_type() -> None:
    env = {"C": "10", "R": "0.5", "V": "false", "N": "42", "P": "5432"}
    got = _validated({"concurrency": "${C}", "ratio": "${R}", "verify": "${V}",
                      "name": "${N}", "port": "${P}"}, env)
    assert got == {"concurrency": 10, "ratio": 0.5, "verify": False, "name": "42",
                   "port": 5432}
    assert type(got["name"]) is str  # text stays text, plainly


def test_defaults_nested_objects_arrays_and_maps_are_typed_too() -> None:
    got = _validated({"concurrency": "${CONC:-10}", "nested": {"retries": "${R:-3}"},
                      "sizes": ["${A:-1}", "${B:-2}"], "labels": {"pii": "${PII:-yes}"}}, {})
    assert got == {"concurrency": 10, "nested": {"retries": 3}, "sizes": [1, 2],
                   "labels": {"pii": True}}


def test_text_around_a_reference_stays_a_string() -> None:
    marked = interpolate({"a": "${X}", "b": "v${X}", "c": "$${X}"}, {"X": "1"})
    assert isinstance(marked["a"], Interpolated)
    assert not isinstance(marked["b"], Interpolated) and marked["b"] == "v1"
    assert not isinstance(marked["c"], Interpolated) and marked["c"] == "${X}"
    with pytest.raises(SpecValidationError) as refused:
        _validated({"concurrency": "1${X}"}, {"X": "0"})
    assert refused.value.problems == [("source.config.concurrency",
                                       "expected integer, got string '10'")]


@pytest.mark.parametrize(("value", "expected"), [
    ("ten", "expected integer, got string 'ten'"),
    ("1.5", "expected integer, got string '1.5'"),
])
def test_a_value_that_does_not_parse_is_refused_naming_the_field(value: str,
                                                                 expected: str) -> None:
    with pytest.raises(SpecValidationError) as refused:
        _validated({"concurrency": "${C}"}, {"C": value})
    assert refused.value.problems == [("source.config.concurrency", expected)]


def test_a_connection_file_types_a_sources_concurrency_and_its_own_fields(
        tmp_path: Path) -> None:
    path = tmp_path / "api.yaml"
    path.write_text("""
source:
  type: rest
  config:
    base_url: http://127.0.0.1:9/
    concurrency: ${CONC:-10}
    streams:
      - name: items
        path: items
        schema: {type: object, properties: {id: {type: integer}}}
checkpoint:
  partitions_per_checkpoint: ${PPC:-4}
""")
    connection = load_connection(path, env={"PPC": "6"})
    assert connection.checkpoint.partitions_per_checkpoint == 6
    source = build_source(connection)
    assert source.config["concurrency"] == 10
