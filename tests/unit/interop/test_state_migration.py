"""Airbyte state in (STREAM, GLOBAL, API document) and out, checked against Airbyte's models."""

from __future__ import annotations

import pytest
from airbyte_protocol.models import AirbyteStateMessage as ReferenceStateMessage

from headwater.errors import StateError
from headwater.interop import SHARED_STATE_STREAM, export_state, parse_airbyte_state
from headwater.protocol import global_stream_state

STREAM_MESSAGES = [
    {"type": "STREAM", "stream": {"stream_descriptor": {"name": "users"},
                                  "stream_state": {"updated_at": "2024-05-01T00:00:00Z"}}},
    {"type": "STREAM", "stream": {"stream_descriptor": {"name": "purchases"},
                                  "stream_state": {"seed": 1, "loop_offset": 7}}},
]
GLOBAL_MESSAGE = {"type": "GLOBAL", "global": {
    "shared_state": {"lsn": 12345},
    "stream_states": [{"stream_descriptor": {"name": "orders"}, "stream_state": {"id": 9}}]}}


def test_stream_state_imports_per_stream_and_exports_the_same_messages() -> None:
    imported = parse_airbyte_state(STREAM_MESSAGES)
    assert imported.kind == "STREAM"
    assert imported.per_stream() == {"users": {"updated_at": "2024-05-01T00:00:00Z"},
                                     "purchases": {"seed": 1, "loop_offset": 7}}
    exported = export_state(imported.per_stream())
    assert sorted(exported, key=lambda m: m["stream"]["stream_descriptor"]["name"]) == \
        sorted(STREAM_MESSAGES, key=lambda m: m["stream"]["stream_descriptor"]["name"])
    for message in exported:
        ReferenceStateMessage.model_validate(message)


def test_global_state_keeps_its_shared_part_and_exports_as_one_global_message() -> None:
    imported = parse_airbyte_state([GLOBAL_MESSAGE])
    stored = imported.per_stream()
    assert stored == {"orders": {"id": 9}, SHARED_STATE_STREAM: {"lsn": 12345}}
    (exported,) = export_state(stored)
    assert exported == GLOBAL_MESSAGE
    reference = ReferenceStateMessage.model_validate(exported)
    assert reference.global_.shared_state.lsn == 12345  # type: ignore[union-attr]


def test_airbyte_api_connection_state_documents_import() -> None:
    stream_doc = {"stateType": "stream", "connectionId": "c1", "streamState": [
        {"streamDescriptor": {"name": "users"}, "streamState": {"updated_at": "2024"}}]}
    assert parse_airbyte_state(stream_doc).per_stream() == {"users": {"updated_at": "2024"}}
    global_doc = {"stateType": "global", "globalState": {
        "sharedState": {"lsn": 1},
        "streamStates": [{"streamDescriptor": {"name": "a"}, "streamState": {"x": 1}}]}}
    assert parse_airbyte_state(global_doc).per_stream() == {"a": {"x": 1},
                                                            SHARED_STATE_STREAM: {"lsn": 1}}


def test_legacy_and_malformed_state_is_refused_with_a_reason() -> None:
    with pytest.raises(StateError, match="LEGACY"):
        parse_airbyte_state([{"type": "LEGACY", "data": {"users": {"id": 1}}}])
    with pytest.raises(StateError, match="legacy"):
        parse_airbyte_state({"stateType": "legacy", "state": {}})
    with pytest.raises(StateError, match="message 0"):
        parse_airbyte_state([{"type": "STREAM", "stream": {"stream_state": {}}}])


def test_for_an_airbyte_connector_each_stream_keeps_the_shared_part_and_exports_back() -> None:
    imported = parse_airbyte_state([GLOBAL_MESSAGE])
    stored = imported.per_stream(shared_with_streams=True)
    # The same shape a sync stores when the connector reports GLOBAL state.
    assert stored == {"orders": global_stream_state({"lsn": 12345}, {"id": 9})}
    assert export_state(stored) == [GLOBAL_MESSAGE]
    api = {"stateType": "global", "globalState": {"sharedState": {"lsn": 1}, "streamStates": [
        {"streamDescriptor": {"name": "a"}, "streamState": {"x": 1}}]}}
    assert parse_airbyte_state(api).per_stream(shared_with_streams=True) == \
        {"a": global_stream_state({"lsn": 1}, {"x": 1})}
    # A STREAM state stays per stream whichever the source.
    assert parse_airbyte_state(STREAM_MESSAGES).per_stream(shared_with_streams=True) == \
        parse_airbyte_state(STREAM_MESSAGES).per_stream()


def test_streams_at_different_shared_positions_export_one_global_message_each() -> None:
    stored = {"a": global_stream_state({"lsn": 5}, {"x": 1}),
              "b": global_stream_state({"lsn": 7}, None),
              "c": global_stream_state({"lsn": 5}, {"x": 3}),
              "plain": {"updated_at": "2024"}}
    exported = export_state(stored)
    assert [(m["type"], m.get("global", {}).get("shared_state")) for m in exported] == \
        [("GLOBAL", {"lsn": 5}), ("GLOBAL", {"lsn": 7}), ("STREAM", None)]
    assert [p["stream_descriptor"]["name"] for p in exported[0]["global"]["stream_states"]] == \
        ["a", "c"]
    for message in exported:
        ReferenceStateMessage.model_validate(message)
    # Imported again, every stream is back at its own shared position.
    assert parse_airbyte_state(exported).per_stream(shared_with_streams=True) == stored
