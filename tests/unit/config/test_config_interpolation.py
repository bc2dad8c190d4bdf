"""``${VAR}`` interpolation on the loaded tree."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.config import interpolate
from headwater.errors import ConfigError

ENV = {"HOST": "db.internal", "PORT": "5432", "EMPTY": "", "TOKEN": "t0k3n-${NOT_A_REF}"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("${HOST}", "db.internal"),
        ("postgres://${HOST}:${PORT}/app", "postgres://db.internal:5432/app"),
        ("${MISSING:-fallback}", "fallback"),
        ("${EMPTY:-fallback}", "fallback"),  # like the shell, :- also covers empty
        ("${HOST:-fallback}", "db.internal"),
        ("${MISSING:-}", ""),
        ("${MISSING:-a:b/c d}", "a:b/c d"),
        ("costs $${PRICE}", "costs ${PRICE}"),
        ("$${HOST} is ${HOST}", "${HOST} is db.internal"),
        ("literal $${ alone", "literal ${ alone"),
        ("pa$$word and $HOST", "pa$$word and $HOST"),  # only ${...} is a reference
        ("${TOKEN}", "t0k3n-${NOT_A_REF}"),  # substituted text is not scanned again
        ("no references", "no references"),
    ],
)
def test_strings(text: str, expected: str) -> None:
    assert interpolate({"v": text}, ENV) == {"v": expected}


def test_non_string_scalars_and_keys_are_untouched() -> None:
    tree: dict[str, Any] = {
        "${HOST}": 1,
        "n": 5,
        "f": 1.5,
        "b": True,
        "none": None,
        "list": [1, "${PORT}", {"x": "${HOST}"}],
    }
    assert interpolate(tree, ENV) == {
        "${HOST}": 1,
        "n": 5,
        "f": 1.5,
        "b": True,
        "none": None,
        "list": [1, "5432", {"x": "db.internal"}],
    }


def test_input_is_not_modified() -> None:
    tree = {"a": ["${HOST}"]}
    interpolate(tree, ENV)
    assert tree == {"a": ["${HOST}"]}


def test_missing_variable_names_variable_field_and_line() -> None:
    tree = {"source": {"config": {"auth": [{"token": "Bearer ${API_TOKEN}"}]}}}
    lines = {"source": 1, "source.config": 2, "source.config.auth[0].token": 7}
    with pytest.raises(ConfigError) as info:
        interpolate(tree, ENV, lines=lines, file="c.yaml")
    assert info.value.context == {
        "file": "c.yaml",
        "field": "source.config.auth[0].token",
        "line": 7,
        "variable": "API_TOKEN",
    }
    assert str(info.value).startswith("environment variable API_TOKEN is not set")


def test_every_missing_variable_is_reported_at_once() -> None:
    tree = {"a": "${ONE}", "b": {"c": "x-${TWO}-${ONE}"}}
    with pytest.raises(ConfigError) as info:
        interpolate(tree, ENV, lines={"a": 3, "b.c": 5})
    message = str(info.value)
    assert "ONE, TWO are not set" in message
    assert "ONE (used at a, line 3)" in message
    assert "TWO (used at b.c, line 5)" in message
    assert "ONE (used at b.c, line 5)" in message


@pytest.mark.parametrize("text", ["${}", "${1ABC}", "${A B}", "x ${UNCLOSED", "${A:?err}"])
def test_malformed_reference_is_an_error_that_does_not_echo_the_value(text: str) -> None:
    with pytest.raises(ConfigError, match="invalid environment variable reference") as info:
        interpolate({"password": f"s3cr3t {text}"}, ENV)
    assert info.value.context["field"] == "password"
    assert "s3cr3t" not in str(info.value)
