"""Check a connector config against the connector's spec (a JSON Schema).

Every problem is reported at once, by field path, in words a person can act
on (``source.config.users: expected integer, got string 'ten'``), with the
file line when the caller knows it.  The value of a secret field (a spec
property marked ``"airbyte_secret": true``) is never part of a message, and
the finished message goes through the process-wide masker as well.

A spec may be the schema itself or a whole Airbyte spec with the schema
under ``connectionSpecification``.  The JSON Schema draft comes from the
schema's ``$schema`` (Draft 7 when it names none, as in Airbyte specs).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

import jsonschema
from jsonschema.exceptions import SchemaError, ValidationError

from headwater.config._interpolation import Interpolated
from headwater.config._paths import format_path, line_of
from headwater.config._secrets import (
    ANY_ITEM,
    connection_specification,
    mask,
    secret_paths,
)
from headwater.errors import ConnectorError, SpecValidationError

_MAX_REPR = 40

_JSON_TYPE_NAMES: tuple[tuple[type, str], ...] = (
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
    (type(None), "null"),
)


#: The specs found to be valid JSON Schemas, as JSON text: checking one against its
#: meta-schema costs more than validating a config with it, and a process validates the
#: same few specs again and again (the page reads every file of its folder, a scheduler
#: each firing's).
_VALID_SCHEMAS: set[str] = set()


def _check_schema(validator_class: Any, schema: Mapping[str, Any], where: str) -> None:
    """Refuse (ConnectorError) a spec that is not a valid JSON Schema, once per spec."""
    try:
        key = json.dumps(schema, sort_keys=True, default=str)
    except (TypeError, ValueError):
        key = None
    if key is not None and key in _VALID_SCHEMAS:
        return
    try:
        validator_class.check_schema(dict(schema))
    except SchemaError as exc:
        raise ConnectorError(
            f"the connector's spec is not a valid JSON Schema: {exc.message}", field=where
        ) from exc
    if key is not None:
        _VALID_SCHEMAS.add(key)


def validate_config(
    spec: Mapping[str, Any],
    config: Mapping[str, Any],
    *,
    where: str = "source.config",
    source_lines: Mapping[str, int] | None = None,
) -> dict[str, Any]:
    """Validate ``config`` against ``spec``; return a copy with the spec's defaults filled in.

    Defaults come from the spec's top-level ``properties`` only and fill
    properties the config leaves out (nested objects keep what they were
    given).  ``where`` prefixes every field path; ``source_lines`` maps field
    paths (as :attr:`ConnectionConfig.field_lines` does) to file lines, which
    are then appended to each problem.

    Raises:
        SpecValidationError: with one ``(field_path, expected)`` problem per
            violation, in file order when lines are known, else by field path.
        ConnectorError: the spec itself is not a valid JSON Schema (a
            connector bug, not a config mistake).
    """
    schema = connection_specification(spec)
    validator_class = jsonschema.validators.validator_for(
        schema, default=jsonschema.Draft7Validator
    )
    _check_schema(validator_class, schema, where)

    filled = _typed(schema, _with_defaults(schema, config))
    validator = validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)
    secrets = set(secret_paths(schema))
    problems: dict[tuple[str, str], None] = {}
    for error in validator.iter_errors(filled):
        for path, expected in _describe(error, where, secrets):
            problems[(path, expected)] = None
    if not problems:
        return filled

    lines = source_lines or {}
    located = sorted((line_of(lines, path) or 0, path, expected) for path, expected in problems)
    listed = [
        (path, mask(f"{expected} (line {line})" if line else expected))
        for line, path, expected in located
    ]
    count = f"{len(listed)} problem" + ("s" if len(listed) > 1 else "")
    raise SpecValidationError(f"{where} does not match the connector's spec ({count})", listed)


_BOOLEANS = {"true": True, "yes": True, "on": True, "1": True,
             "false": False, "no": False, "off": False, "0": False}
_INTEGER = re.compile(r"[+-]?\d+")


def _typed(schema: Any, value: Any) -> Any:
    """``value`` with each whole-value ``${VAR}`` (:class:`Interpolated`) converted to the
    integer, number or boolean its field's schema declares, and left text otherwise.

    A value that does not parse as that type stays text, so the validator
    reports the field and the expected type as for any other mistake.
    """
    if isinstance(value, Interpolated):
        return _converted(str(value), _types(schema))
    if isinstance(value, Mapping):
        properties = schema.get("properties", {}) if isinstance(schema, Mapping) else {}
        extra = schema.get("additionalProperties") if isinstance(schema, Mapping) else None
        return {key: _typed(properties.get(key, extra if isinstance(extra, Mapping) else {}),
                            item) for key, item in value.items()}
    if isinstance(value, list):
        items = schema.get("items", {}) if isinstance(schema, Mapping) else {}
        return [_typed(items if isinstance(items, Mapping) else {}, item) for item in value]
    return value


def _types(schema: Any) -> set[str]:
    """The JSON types ``schema`` allows, its ``oneOf``/``anyOf`` branches included."""
    if not isinstance(schema, Mapping):
        return set()
    declared = schema.get("type")
    found = {declared} if isinstance(declared, str) else set(declared or ())
    for key in ("oneOf", "anyOf", "allOf"):
        for branch in schema.get(key) or ():
            found |= _types(branch)
    return found


def _converted(text: str, types: set[str]) -> Any:
    if not types or "string" in types:
        return text
    if "integer" in types and _INTEGER.fullmatch(text.strip()):
        return int(text)
    if "number" in types:
        try:
            return float(text)
        except ValueError:
            pass
    if "boolean" in types and text.strip().lower() in _BOOLEANS:
        return _BOOLEANS[text.strip().lower()]
    return text


def _with_defaults(schema: Mapping[str, Any], config: Mapping[str, Any]) -> dict[str, Any]:
    filled = copy.deepcopy(dict(config)) if isinstance(config, Mapping) else config
    properties = schema.get("properties")
    if isinstance(filled, dict) and isinstance(properties, Mapping):
        for name, prop in properties.items():
            if name not in filled and isinstance(prop, Mapping) and "default" in prop:
                filled[name] = copy.deepcopy(prop["default"])
    return filled


def _describe(
    error: ValidationError, where: str, secrets: set[tuple[str, ...]]
) -> Iterable[tuple[str, str]]:
    """Turn one jsonschema error into ``(field_path, expected)`` pairs."""
    parts = list(error.absolute_path)
    path = format_path(parts, prefix=where)
    # jsonschema types these as possibly unset; they are always set on a reported error.
    keyword, rule, instance = str(error.validator), cast(Any, error.validator_value), error.instance
    schema = cast(Mapping[str, Any], error.schema)

    if keyword in ("oneOf", "anyOf"):
        yield from _describe_choice(error, where, secrets)
        return
    if keyword == "required":
        present = instance if isinstance(instance, Mapping) else {}
        for name in rule:
            if name not in present:
                yield format_path([name], prefix=path), "required property is missing"
        return
    if keyword == "additionalProperties" and rule is False and isinstance(instance, Mapping):
        allowed = [str(name) for name in schema.get("properties") or {}]
        patterns = list(schema.get("patternProperties") or {})
        for name in instance:
            if name in allowed or any(_matches(pattern, name) for pattern in patterns):
                continue
            hint = f" (allowed: {', '.join(allowed)})" if allowed else ""
            yield format_path([name], prefix=path), f"unknown property {name!r}{hint}"
        return

    got = _got(instance, parts, schema, secrets)
    if keyword == "type":
        wanted = rule if isinstance(rule, list) else [rule]
        yield path, f"expected {' or '.join(wanted)}, got {got}"
    elif keyword == "enum":
        yield path, f"must be one of {list(rule)!r} (got {got})"
    elif keyword == "const":
        yield path, f"must be {rule!r} (got {got})"
    elif keyword in _BOUNDS:
        yield path, f"must be {_BOUNDS[keyword]} {rule} (got {got})"
    elif keyword in _SIZES:
        yield path, _SIZES[keyword].format(rule)
    elif keyword == "pattern":
        yield path, f"must match the pattern {rule!r}"
    elif keyword == "format":
        yield path, f"must be a valid {rule}"
    elif keyword == "multipleOf":
        yield path, f"must be a multiple of {rule}"
    elif keyword == "uniqueItems":
        yield path, "items must be unique"
    elif keyword in ("dependencies", "dependentRequired") and isinstance(instance, Mapping):
        for name, needs in rule.items():
            if name in instance and isinstance(needs, list):
                for need in needs:
                    if need not in instance:
                        yield format_path([need], prefix=path), f"required when {name!r} is set"
    else:
        # jsonschema's own message repeats the value, which may be a secret.
        yield path, f"breaks the spec's {keyword!r} rule"


_BOUNDS = {
    "minimum": ">=",
    "maximum": "<=",
    "exclusiveMinimum": ">",
    "exclusiveMaximum": "<",
}
_SIZES = {
    "minLength": "must be at least {} characters long",
    "maxLength": "must be at most {} characters long",
    "minItems": "must have at least {} items",
    "maxItems": "must have at most {} items",
    "minProperties": "must have at least {} properties",
    "maxProperties": "must have at most {} properties",
}


def _describe_choice(
    error: ValidationError, where: str, secrets: set[tuple[str, ...]]
) -> Iterable[tuple[str, str]]:
    """Explain a failed ``oneOf`` / ``anyOf`` by the option the config was aiming at.

    Airbyte specs choose between options with a ``const`` discriminator
    (``auth_type: oauth``).  Options whose discriminator does not match are
    set aside; of the others, the one with the fewest problems is explained.
    When no discriminator matches, the discriminator itself is the problem.
    """
    path = format_path(error.absolute_path, prefix=where)
    if not error.context:
        yield path, "matches more than one of the allowed options; it must match exactly one"
        return
    by_option: dict[int, list[ValidationError]] = {}
    for sub in error.context:
        by_option.setdefault(int(sub.relative_schema_path[0]), []).append(sub)

    def mismatched(sub: ValidationError) -> bool:
        return sub.validator in ("const", "enum") and len(sub.relative_path) == 1

    aimed_at = [subs for subs in by_option.values() if not any(mismatched(s) for s in subs)]
    if aimed_at:
        for sub in min(aimed_at, key=len):
            yield from _describe(sub, where, secrets)
        return

    discriminators = {
        str(sub.relative_path[0]) for subs in by_option.values() for sub in subs if mismatched(sub)
    }
    options: list[Any] = error.validator_value if isinstance(error.validator_value, list) else []
    for name in sorted(discriminators):
        allowed = [value for option in options for value in _const_values(option, name)]
        got = "missing"
        if isinstance(error.instance, Mapping) and name in error.instance:
            got = _got(error.instance[name], [*error.absolute_path, name], {}, secrets)
        yield format_path([name], prefix=path), f"must be one of {allowed!r} (got {got})"


def _const_values(option: Any, name: str) -> list[Any]:
    prop = (option.get("properties") or {}).get(name) if isinstance(option, Mapping) else None
    if not isinstance(prop, Mapping):
        return []
    if "const" in prop:
        return [prop["const"]]
    enum = prop.get("enum")
    return list(enum) if isinstance(enum, list) else []


def _got(
    value: Any,
    parts: Sequence[str | int],
    schema: Any,
    secrets: set[tuple[str, ...]],
) -> str:
    """Describe what the config holds: its JSON type, plus a short repr unless it is secret."""
    type_name = next((name for kind, name in _JSON_TYPE_NAMES if isinstance(value, kind)), "value")
    if _is_secret(parts, schema, secrets) or isinstance(value, (list, dict)) or value is None:
        return type_name
    shown = repr(value)
    if len(shown) > _MAX_REPR:
        shown = shown[: _MAX_REPR - 1] + "…"
    return f"{type_name} {shown}"


def _is_secret(parts: Sequence[str | int], schema: Any, secrets: set[tuple[str, ...]]) -> bool:
    if isinstance(schema, Mapping) and schema.get("airbyte_secret") is True:
        return True
    normalized = tuple(ANY_ITEM if isinstance(part, int) else part for part in parts)
    return any(normalized[:length] in secrets for length in range(1, len(normalized) + 1))


def _matches(pattern: str, name: str) -> bool:
    try:
        return re.search(pattern, name) is not None
    except re.error:
        return False
