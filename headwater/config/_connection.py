"""Loading a connection file: read, parse with lines, interpolate ``${VAR}``, validate.

The models are :mod:`._models`; the YAML line map :mod:`._yaml_lines`; how a
validation error reads :mod:`._problems`.  :func:`load_connection` reports
problems by field path and file line; :attr:`ConnectionConfig.field_lines`
keeps the line of every field so later checks (the connector's spec, the
catalog) can point at the file too.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import pydantic

from headwater.config._interpolation import interpolate
from headwater.config._models import ConnectionConfig
from headwater.config._problems import allowed, kind_of, problems, with_line
from headwater.config._yaml_lines import parse_with_lines
from headwater.errors import ConfigError, SpecValidationError


def load_connection(path: str | Path, env: Mapping[str, str] | None = None) -> ConnectionConfig:
    """Read, interpolate and validate a connection file.

    ``env`` fills ``${VAR}`` references (default: ``os.environ``).  The name
    defaults to the file name without its suffix.

    Raises:
        ConfigError: the file cannot be read or parsed (with its line), or
            an environment variable without default is unset.
        SpecValidationError: the file's structure is wrong; one
            ``(field_path, expected)`` problem per mistake, with its line.
    """
    file = Path(path)
    where = str(file)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise ConfigError("connection file not found", file=where) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the connection file: {exc}", file=where) from exc

    data, lines = parse_with_lines(text, where)
    if data is None:
        raise ConfigError("the connection file is empty", file=where)
    if not isinstance(data, dict):
        raise ConfigError(
            f"the connection file must be a mapping of fields, not a {kind_of(data)}",
            file=where,
            line=lines.get(""),
        )

    found: list[tuple[str, str]] = []
    if "path" in data:
        # ``path`` is where the file was found, not something a file can claim.
        data = {key: value for key, value in data.items() if key != "path"}
        found.append(("path", with_line(f"unknown field{allowed('path', ())}", lines, "path")))
    data = interpolate(data, os.environ if env is None else env, lines=lines, file=where)
    name_from_file = "name" not in data
    if name_from_file:
        data["name"] = file.stem

    try:
        connection = ConnectionConfig.model_validate({**data, "path": file})
    except pydantic.ValidationError as exc:
        # Translated into problems and deliberately not chained: pydantic's
        # own text repeats every input value, secrets included.
        found += problems(exc, lines, file.stem if name_from_file else None)
    if found:
        count = f"{len(found)} problem" + ("s" if len(found) > 1 else "")
        raise SpecValidationError(
            f"the connection file is not valid ({count})", found, file=where
        )
    connection._field_lines = lines
    return connection
