"""State messages: the helper a source uses, and the three state shapes on the wire."""

from __future__ import annotations

import json

from headwater.protocol import (
    AirbyteGlobalState,
    AirbyteMessage,
    AirbyteStateMessage,
    AirbyteStateType,
    AirbyteStreamState,
    MessageType,
    StreamDescriptor,
    stream_state_message,
)


def test_stream_state_message_builds_a_stream_state() -> None:
    message = stream_state_message(
        "users", {"updated_at": "2024-05-01"}, namespace="crm", record_count=3
    )

    assert message.model_dump(mode="json", exclude_none=True) == {
        "type": "STREAM",
        "stream": {
            "stream_descriptor": {"name": "users", "namespace": "crm"},
            "stream_state": {"updated_at": "2024-05-01"},
        },
        "sourceStats": {"recordCount": 3.0},
    }


def test_stream_state_message_writes_record_count_as_a_double() -> None:
    line = AirbyteMessage(
        type=MessageType.STATE, state=stream_state_message("users", {}, record_count=3)
    ).to_json_line()

    assert '"recordCount":3.0' in line


def test_stream_state_message_without_count_has_no_stats() -> None:
    dumped = stream_state_message("users", {"id": 7}).model_dump(mode="json", exclude_none=True)

    assert "sourceStats" not in dumped
    assert dumped["stream"]["stream_descriptor"] == {"name": "users"}


def test_null_cursor_value_survives_a_round_trip() -> None:
    message = stream_state_message("users", {"updated_at": None})

    parsed = AirbyteStateMessage.model_validate_json(message.model_dump_json(exclude_none=True))

    assert parsed.stream is not None
    assert parsed.stream.stream_state == {"updated_at": None}


def test_global_state_is_global_on_the_wire_and_global_underscore_in_python() -> None:
    message = AirbyteStateMessage(
        type=AirbyteStateType.GLOBAL,
        global_=AirbyteGlobalState(
            shared_state={"lsn": 10},
            stream_states=[AirbyteStreamState(stream_descriptor=StreamDescriptor(name="users"))],
        ),
    )

    dumped = json.loads(message.model_dump_json(exclude_none=True))
    parsed = AirbyteStateMessage.model_validate(dumped)

    assert dumped["global"]["shared_state"] == {"lsn": 10}
    assert "global_" not in dumped
    assert parsed.global_ == message.global_


def test_legacy_state_without_type_still_parses() -> None:
    parsed = AirbyteStateMessage.model_validate({"data": {"users": {"id": 7}}})

    assert parsed.type is None
    assert parsed.data == {"users": {"id": 7}}
