"""Airbyte protocol models, Headwater's own, checked in tests against Airbyte's.

Headwater speaks the Airbyte protocol both ways: its sources answer ``spec`` / ``check``
/ ``discover`` / ``read`` with these messages, and it reads the messages of Airbyte
connectors with them.  They are pydantic models written here, not imported from the
``airbyte-protocol-models`` package, so that package is a test-only dependency; the
tests round-trip every model through it to prove the JSON is the same.

Wire rules: field names are the protocol's own (``connectionSpecification``,
``emitted_at``); unknown fields are kept, so a newer connector passes through intact;
serialize with ``model_dump(mode="json", exclude_none=True)`` or, for a whole message,
:meth:`AirbyteMessage.to_json_line`.

Example, a source checkpointing the stream ``users``::

    state = stream_state_message("users", {"id": 7}, record_count=2)
    print(AirbyteMessage(type=MessageType.STATE, state=state).to_json_line())
    # {"type":"STATE","state":{"type":"STREAM","stream":{"stream_descriptor":{"name":"users"},
    #  "stream_state":{"id":7}},"sourceStats":{"recordCount":2.0}}}
"""

from headwater.protocol._catalog import (
    AirbyteCatalog,
    AirbyteStream,
    ConfiguredAirbyteCatalog,
    ConfiguredAirbyteStream,
    DestinationSyncMode,
    SyncMode,
)
from headwater.protocol._messages import (
    AirbyteConnectionStatus,
    AirbyteControlConnectorConfigMessage,
    AirbyteControlMessage,
    AirbyteErrorTraceMessage,
    AirbyteLogMessage,
    AirbyteMessage,
    AirbyteRecordMessage,
    AirbyteRecordMessageMeta,
    AirbyteRecordMessageMetaChange,
    AirbyteStreamStatus,
    AirbyteStreamStatusTraceMessage,
    AirbyteTraceMessage,
    CheckStatus,
    ConnectorSpecification,
    FailureType,
    LogLevel,
    MessageType,
    OrchestratorType,
    RecordChange,
    RecordChangeReason,
    TraceType,
)
from headwater.protocol._state import (
    GLOBAL_STATE_KEY,
    AirbyteGlobalState,
    AirbyteStateMessage,
    AirbyteStateStats,
    AirbyteStateType,
    AirbyteStreamState,
    StreamDescriptor,
    global_state_message,
    global_stream_state,
    split_global_stream_state,
    stream_state_message,
)

__all__ = [
    "GLOBAL_STATE_KEY",
    "AirbyteCatalog",
    "AirbyteConnectionStatus",
    "AirbyteControlConnectorConfigMessage",
    "AirbyteControlMessage",
    "AirbyteErrorTraceMessage",
    "AirbyteGlobalState",
    "AirbyteLogMessage",
    "AirbyteMessage",
    "AirbyteRecordMessage",
    "AirbyteRecordMessageMeta",
    "AirbyteRecordMessageMetaChange",
    "AirbyteStateMessage",
    "AirbyteStateStats",
    "AirbyteStateType",
    "AirbyteStream",
    "AirbyteStreamState",
    "AirbyteStreamStatus",
    "AirbyteStreamStatusTraceMessage",
    "AirbyteTraceMessage",
    "CheckStatus",
    "ConfiguredAirbyteCatalog",
    "ConfiguredAirbyteStream",
    "ConnectorSpecification",
    "DestinationSyncMode",
    "FailureType",
    "LogLevel",
    "MessageType",
    "OrchestratorType",
    "RecordChange",
    "RecordChangeReason",
    "StreamDescriptor",
    "SyncMode",
    "TraceType",
    "global_state_message",
    "global_stream_state",
    "split_global_stream_state",
    "stream_state_message",
]
