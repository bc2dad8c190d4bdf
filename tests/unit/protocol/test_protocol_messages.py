"""AirbyteMessage as a line on a pipe: what ``to_json_line`` writes and ``parse_line`` accepts."""

from __future__ import annotations

import json

import pytest

from headwater.errors import ConnectorError
from headwater.protocol import (
    AirbyteConnectionStatus,
    AirbyteLogMessage,
    AirbyteMessage,
    AirbyteRecordMessage,
    CheckStatus,
    ConnectorSpecification,
    LogLevel,
    MessageType,
)


def _record_message(**data: object) -> AirbyteMessage:
    return AirbyteMessage(
        type=MessageType.RECORD,
        record=AirbyteRecordMessage(stream="users", data=dict(data), emitted_at=1_714_560_000_000),
    )


def test_json_line_is_one_compact_line_without_absent_fields() -> None:
    message = _record_message(id=7, bio="line one\nline two")

    line = message.to_json_line()

    assert "\n" not in line
    assert ", " not in line and '": ' not in line
    assert line == (
        '{"type":"RECORD","record":{"stream":"users",'
        '"data":{"id":7,"bio":"line one\\nline two"},"emitted_at":1714560000000}}'
    )


def test_json_line_keeps_null_values_inside_record_data() -> None:
    line = _record_message(id=7, email=None).to_json_line()

    record = json.loads(line)["record"]

    assert record["data"] == {"id": 7, "email": None}
    assert "namespace" not in record
    assert "meta" not in record


def test_json_line_round_trips_through_parse_line() -> None:
    message = AirbyteMessage(
        type=MessageType.SPEC,
        spec=ConnectorSpecification(
            documentationUrl="https://docs.example.com/sample",
            connectionSpecification={"type": "object", "required": ["api_key"]},
        ),
    )

    parsed = AirbyteMessage.parse_line(message.to_json_line() + "\n")

    assert parsed == message
    assert parsed.spec is not None
    assert parsed.spec.connectionSpecification["required"] == ["api_key"]


def test_unknown_fields_pass_through() -> None:
    line = (
        '{"type":"CONNECTION_STATUS","connectionStatus":{"status":"SUCCEEDED","latency_ms":12},'
        '"future_field":{"x":1}}'
    )

    message = AirbyteMessage.parse_line(line)

    assert message.connectionStatus == AirbyteConnectionStatus.model_validate(
        {"status": "SUCCEEDED", "latency_ms": 12}
    )
    assert message.connectionStatus.status is CheckStatus.SUCCEEDED
    assert json.loads(message.to_json_line()) == json.loads(line)


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("", "Invalid JSON"),
        ("Starting source-faker v6.2.1", "Invalid JSON"),
        ('{"type":"RECORD","record":{"stream":"users"', "Invalid JSON"),
        ("[1, 2, 3]", "object"),
        ('{"record":{"stream":"users","data":{},"emitted_at":1}}', "type"),
        ('{"type":"HEARTBEAT"}', "type"),
        ('{"type":"RECORD"}', "needs the field 'record'"),
        ('{"type":"LOG","record":{"stream":"u","data":{},"emitted_at":1}}', "'log'"),
        ('{"type":"RECORD","record":{"stream":"u","data":{},"emitted_at":"soon"}}', "emitted_at"),
        ('{"type":"LOG","log":{"level":"LOUD","message":"x"}}', "log.level"),
    ],
)
def test_parse_line_rejects_what_is_not_a_message(line: str, problem: str) -> None:
    with pytest.raises(ConnectorError) as caught:
        AirbyteMessage.parse_line(line)

    assert problem in caught.value.message
    assert caught.value.context["line"] == line.strip()


def test_parse_line_error_shows_only_the_start_of_a_long_line() -> None:
    line = '{"type":"LOG","log":{"level":"INFO","message":"' + "x" * 5_000

    with pytest.raises(ConnectorError) as caught:
        AirbyteMessage.parse_line(line)

    excerpt = caught.value.context["line"]
    assert line.startswith(excerpt.removesuffix("..."))
    assert excerpt.endswith("...")
    assert len(excerpt) < 200
    assert len(str(caught.value)) < 400


def test_parse_line_error_keeps_the_pydantic_error_as_cause() -> None:
    with pytest.raises(ConnectorError) as caught:
        AirbyteMessage.parse_line("not json")

    assert caught.value.__cause__ is not None
    assert type(caught.value.__cause__).__name__ == "ValidationError"


def test_a_message_must_carry_the_payload_its_type_names() -> None:
    log = AirbyteLogMessage(level=LogLevel.INFO, message="hi")

    with pytest.raises(ValueError, match="needs the field 'record'"):
        AirbyteMessage(type=MessageType.RECORD, log=log)

    assert AirbyteMessage(type=MessageType.LOG, log=log).log is log


def test_record_emitted_at_is_whole_milliseconds() -> None:
    with pytest.raises(ValueError, match="emitted_at"):
        AirbyteRecordMessage(stream="users", data={}, emitted_at=1_714_560_000_000.5)  # type: ignore[arg-type]


def test_spec_defaults_match_airbytes() -> None:
    spec = ConnectorSpecification(connectionSpecification={"type": "object"})

    assert spec.model_dump(mode="json", exclude_none=True) == {
        "connectionSpecification": {"type": "object"},
        "supportsNormalization": False,
        "supportsDBT": False,
    }
