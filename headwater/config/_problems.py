"""Pydantic's validation errors as a person reads them: field path, what was expected,
the line, and never the value found (it may be a secret)."""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any, get_args, get_origin

import pydantic
from pydantic import BaseModel

from headwater.config._models import ConnectionConfig
from headwater.config._paths import format_path, line_of

# Pydantic error types that mean "the value has the wrong type", and the type wanted.
_EXPECTED_TYPES = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "a mapping",
    "model_type": "a mapping",
    "model_attributes_type": "a mapping",
}


def problems(
    exc: pydantic.ValidationError, lines: Mapping[str, int], name_from_file: str | None
) -> list[tuple[str, str]]:
    located = []
    for error in exc.errors(include_url=False):
        loc = tuple(error["loc"])
        path = format_path(loc)
        expected = _expected(error, loc)
        if loc == ("name",) and name_from_file is not None:
            expected += f" (the name comes from the file name {name_from_file!r}: set name:)"
        line = line_of(lines, path)
        located.append((line or 0, path, f"{expected} (line {line})" if line else expected))
    # In file order, as a person fixes them.
    return [(path, expected) for _, path, expected in sorted(located, key=lambda p: p[0])]


def _expected(error: Any, loc: tuple[str | int, ...]) -> str:
    """Say what was expected, showing the type of what was found, never a value.

    The one exception is a misspelt keyword (a sync mode), shown so the
    typo is visible; such fields never hold secrets.
    """
    kind, ctx, found = error["type"], error.get("ctx") or {}, error.get("input")
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return "unknown field" + allowed(str(loc[-1]), loc[:-1])
    if kind in ("enum", "literal_error"):
        shown = repr(found) if isinstance(found, str) and len(found) <= 40 else kind_of(found)
        return f"expected {ctx.get('expected', 'one of the allowed values')} (got {shown})"
    if kind == "value_error":
        return str(ctx.get("error", error["msg"]))
    if kind in _EXPECTED_TYPES:
        return f"expected {_EXPECTED_TYPES[kind]} (got {kind_of(found)})"
    if kind == "greater_than_equal":
        return f"must be >= {ctx.get('ge')}"
    if kind in ("string_too_short", "too_short"):
        return "must not be empty"
    message = str(error["msg"]).replace("Input should be", "expected", 1)
    return f"{message} (got {kind_of(found)})"


def allowed(key: str, parent: tuple[str | int, ...]) -> str:
    """``" (did you mean 'x'? allowed: a, b)"`` for an unknown key under ``parent``."""
    model = _model_at(parent)
    if model is None:
        return ""
    names = [name for name, field in model.model_fields.items() if not field.exclude]
    close = difflib.get_close_matches(key, names, n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    return f" ({hint}allowed: {', '.join(names)})"


def _model_at(loc: tuple[str | int, ...]) -> type[BaseModel] | None:
    """The model class that validates the value at ``loc`` of a connection file."""
    current: Any = ConnectionConfig
    for part in loc:
        current = _without_none(current)
        if isinstance(part, int):
            args = get_args(current)
            current = args[0] if get_origin(current) is list and args else None
        elif isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(part)
            current = field.annotation if field is not None else None
        else:
            return None
    current = _without_none(current)
    return current if isinstance(current, type) and issubclass(current, BaseModel) else None


def _without_none(annotation: Any) -> Any:
    args = [arg for arg in get_args(annotation) if arg is not type(None)]
    if get_origin(annotation) is not list and len(args) == 1:
        return args[0]
    return annotation


def with_line(expected: str, lines: Mapping[str, int], path: str) -> str:
    line = line_of(lines, path)
    return f"{expected} (line {line})" if line else expected


def kind_of(value: Any) -> str:
    """The YAML-level name of a value's type, used instead of the value itself."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "mapping"
    if isinstance(value, list | tuple):
        return "list"
    return type(value).__name__
