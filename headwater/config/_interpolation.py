"""``${VAR}`` references in a loaded connection file, filled from the environment.

A connection file lives in git, so secrets and per-environment values come
from environment variables::

    api_key: ${SAMPLE_API_KEY}                 # whole value
    url: https://${API_HOST:-api.example.com}/v2   # inside a string, with a default
    note: costs $${PRICE}                      # escaped: the literal text ${PRICE}

Interpolation runs on the parsed tree, never on the file text: a value that
contains YAML syntax (``: ``, ``#``, quotes, newlines) stays one string and
cannot change the structure of the file.  Only string values are touched;
mapping keys, numbers, booleans and nulls are left as they are.  A substituted
value is a string; one that is the *whole* value (``port: ${PORT:-5432}``) is
marked :class:`Interpolated`, and the spec that reads the field converts it to
the integer, number or boolean it declares (``"5432"`` becomes ``5432``), as
users of every config-with-env tool expect; text around a reference stays text.

Rules, following the shell:

- ``${NAME}``: the variable's value; an unset variable is an error.
- ``${NAME:-default}``: the default when the variable is unset *or empty*.
  The default is literal text and cannot contain ``}`` or another reference.
- ``$${`` is a literal ``${``.  A substituted value is not scanned again.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from headwater.config._paths import format_path, line_of
from headwater.errors import ConfigError

# ``$${...}`` (escape) or ``${...}``; the inside is checked separately so a
# malformed reference is reported instead of being left in place silently.
_REFERENCE = re.compile(r"\$(?P<escape>\$?)\{(?:(?P<inside>[^}]*)\})?")
_INSIDE = re.compile(r"(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>.*))?", re.DOTALL)


class Interpolated(str):
    """A whole value that came from one ``${VAR}``: the spec of its field types it."""

    __slots__ = ()


def interpolate(
    tree: Any,
    env: Mapping[str, str],
    *,
    lines: Mapping[str, int] | None = None,
    file: str | None = None,
) -> Any:
    """Return a copy of ``tree`` with every ``${VAR}`` in its strings replaced from ``env``.

    Every unset variable is collected before raising, so one run of
    ``headwater validate`` names all of them.  Errors name the variable and
    the field path (and the line, when ``lines`` maps paths to lines), never
    the text of the value, which may be a secret.

    Raises:
        ConfigError: a variable without default is unset, or a ``${`` does
            not start a valid reference.
    """
    missing: list[tuple[str, str]] = []
    result = _walk(tree, (), env, missing, lines or {}, file)
    if missing:
        raise _missing_error(missing, lines or {}, file)
    return result


def _walk(
    node: Any,
    path: tuple[str | int, ...],
    env: Mapping[str, str],
    missing: list[tuple[str, str]],
    lines: Mapping[str, int],
    file: str | None,
) -> Any:
    if isinstance(node, str):
        return _substitute(node, format_path(path), env, missing, lines, file)
    if isinstance(node, Mapping):
        return {
            key: _walk(value, (*path, str(key)), env, missing, lines, file)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [
            _walk(item, (*path, index), env, missing, lines, file)
            for index, item in enumerate(node)
        ]
    return node


def _substitute(
    text: str,
    field: str,
    env: Mapping[str, str],
    missing: list[tuple[str, str]],
    lines: Mapping[str, int],
    file: str | None,
) -> str:
    if "$" not in text:
        return text

    def replace(match: re.Match[str]) -> str:
        escaped, inside = match.group("escape"), match.group("inside")
        if escaped:
            return "${" if inside is None else "${" + inside + "}"
        reference = _INSIDE.fullmatch(inside) if inside is not None else None
        if reference is None:
            raise ConfigError(
                "invalid environment variable reference: write ${NAME} or ${NAME:-default}, "
                "and $${ for a literal ${",
                file=file,
                field=field,
                line=line_of(lines, field),
            )
        name, default = reference.group("name"), reference.group("default")
        value = env.get(name)
        if default is not None and not value:
            return default
        if value is None:
            missing.append((name, field))
            return ""
        return value

    substituted = _REFERENCE.sub(replace, text)
    whole = _REFERENCE.fullmatch(text)
    return Interpolated(substituted) if whole and not whole.group("escape") else substituted


def _missing_error(
    missing: list[tuple[str, str]], lines: Mapping[str, int], file: str | None
) -> ConfigError:
    if len(missing) == 1:
        name, field = missing[0]
        return ConfigError(
            f"environment variable {name} is not set and has no default",
            file=file,
            field=field,
            line=line_of(lines, field),
            variable=name,
        )
    uses = []
    for name, field in missing:
        line = line_of(lines, field)
        uses.append(f"  - {name} (used at {field}" + (f", line {line})" if line else ")"))
    names = ", ".join(dict.fromkeys(name for name, _ in missing))
    return ConfigError(
        f"environment variables {names} are not set and have no default:\n" + "\n".join(uses),
        file=file,
    )
