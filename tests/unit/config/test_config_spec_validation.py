"""Connector configs checked against their spec: every problem, in words, no secrets."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.config import validate_config
from headwater.errors import ConnectorError, SpecValidationError

SPEC: dict[str, Any] = {
    "documentationUrl": "https://example.com",
    "connectionSpecification": {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "required": ["users", "api_key"],
        "additionalProperties": False,
        "properties": {
            "users": {"type": "integer", "minimum": 1},
            "seed": {"type": "integer", "default": 42},
            "region": {"type": "string", "enum": ["eu", "us"], "default": "eu"},
            "api_key": {"type": "string", "airbyte_secret": True, "minLength": 8},
            "pin": {"type": "integer", "airbyte_secret": True},
            "start_date": {"type": "string", "format": "date"},
            "auth": {
                "type": "object",
                "oneOf": [
                    {
                        "required": ["auth_type", "token"],
                        "properties": {
                            "auth_type": {"const": "token"},
                            "token": {"type": "string", "airbyte_secret": True},
                        },
                    },
                    {
                        "required": ["auth_type", "client_id", "client_secret"],
                        "properties": {
                            "auth_type": {"const": "oauth"},
                            "client_id": {"type": "string"},
                            "client_secret": {"type": "string", "airbyte_secret": True},
                        },
                    },
                ],
            },
        },
    },
}

SECRET = "sk-live-0123456789"


def problems(config: dict[str, Any], **kwargs: Any) -> dict[str, str]:
    with pytest.raises(SpecValidationError) as info:
        validate_config(SPEC, config, **kwargs)
    return dict(info.value.problems)


def test_valid_config_gets_top_level_defaults_without_touching_the_input() -> None:
    config = {"users": 10, "api_key": SECRET, "seed": 7}
    result = validate_config(SPEC, config)
    assert result == {"users": 10, "api_key": SECRET, "seed": 7, "region": "eu"}
    assert config == {"users": 10, "api_key": SECRET, "seed": 7}


def test_schema_without_airbyte_envelope_is_accepted() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "default": 1}}}
    assert validate_config(schema, {}) == {"n": 1}


def test_wrong_type_shows_the_type_and_a_short_repr() -> None:
    assert problems({"users": "ten", "api_key": SECRET}) == {
        "source.config.users": "expected integer, got string 'ten'"
    }


def test_missing_required_property_is_reported_at_its_own_path() -> None:
    assert problems({}) == {
        "source.config.users": "required property is missing",
        "source.config.api_key": "required property is missing",
    }


def test_enum_minimum_and_format() -> None:
    found = problems({"users": 0, "api_key": SECRET, "region": "mars", "start_date": "yesterday"})
    assert found == {
        "source.config.users": "must be >= 1 (got integer 0)",
        "source.config.region": "must be one of ['eu', 'us'] (got string 'mars')",
        "source.config.start_date": "must be a valid date",
    }


def test_unknown_property_lists_the_allowed_ones() -> None:
    found = problems({"users": 1, "api_key": SECRET, "userz": 5})
    assert found == {
        "source.config.userz": "unknown property 'userz' (allowed: users, seed, region, "
        "api_key, pin, start_date, auth)"
    }


def test_nested_path_inside_the_chosen_oneof_option() -> None:
    found = problems(
        {"users": 1, "api_key": SECRET, "auth": {"auth_type": "oauth", "client_id": 5}}
    )
    assert found == {
        "source.config.auth.client_id": "expected string, got integer 5",
        "source.config.auth.client_secret": "required property is missing",
    }


def test_unknown_oneof_option_names_the_discriminator_values() -> None:
    found = problems({"users": 1, "api_key": SECRET, "auth": {"auth_type": "basic"}})
    assert found == {
        "source.config.auth.auth_type": "must be one of ['token', 'oauth'] (got string 'basic')"
    }


def test_every_problem_is_collected_and_where_prefixes_paths() -> None:
    found = problems({"users": -1, "region": 3}, where="destination.config")
    assert set(found) == {
        "destination.config.users",
        "destination.config.region",
        "destination.config.api_key",
    }


def test_source_lines_are_appended_using_the_nearest_known_field() -> None:
    lines = {"source.config": 4, "source.config.users": 5}
    found = problems({"users": "x"}, source_lines=lines)
    assert found == {
        "source.config.users": "expected integer, got string 'x' (line 5)",
        "source.config.api_key": "required property is missing (line 4)",
    }


def test_problems_are_listed_in_the_message() -> None:
    with pytest.raises(SpecValidationError) as info:
        validate_config(SPEC, {"users": "ten", "api_key": SECRET})
    assert str(info.value) == (
        "source.config does not match the connector's spec (1 problem)\n"
        "  - source.config.users: expected integer, got string 'ten'"
    )


@pytest.mark.parametrize(
    "config",
    [
        {"users": 1, "api_key": "short"},  # minLength on a secret
        {"users": 1, "api_key": SECRET, "pin": SECRET},  # wrong type on a secret
        {"users": 1, "api_key": 12345678901234},  # wrong type, secret given as a number
        {"users": 1, "api_key": SECRET, "auth": {"auth_type": "token", "token": ["x", SECRET]}},
        {"users": 1, "api_key": SECRET, "auth": {"auth_type": "oauth", "client_secret": SECRET}},
    ],
)
def test_a_secret_value_never_appears_in_the_error(config: dict[str, Any]) -> None:
    with pytest.raises(SpecValidationError) as info:
        validate_config(SPEC, config)
    text = str(info.value) + repr(info.value.problems)
    assert SECRET not in text
    assert "short" not in text
    assert "12345678901234" not in text


def test_secret_type_error_says_the_type_only() -> None:
    assert problems({"users": 1, "api_key": SECRET, "pin": "1234"}) == {
        "source.config.pin": "expected integer, got string"
    }


def test_long_values_are_shortened() -> None:
    found = problems({"users": "x" * 200, "api_key": SECRET})
    assert len(found["source.config.users"]) < 80
    assert found["source.config.users"].endswith("…")


def test_draft_2020_12_is_picked_from_schema_keyword() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"ids": {"type": "array", "prefixItems": [{"type": "integer"}]}},
    }
    with pytest.raises(SpecValidationError) as info:
        validate_config(schema, {"ids": ["a"]})
    assert info.value.problems == [("source.config.ids[0]", "expected integer, got string 'a'")]


def test_invalid_spec_is_a_connector_error() -> None:
    with pytest.raises(ConnectorError, match="not a valid JSON Schema"):
        validate_config({"type": "object", "properties": {"n": {"type": "integr"}}}, {})
