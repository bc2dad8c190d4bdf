"""Airbyte messages: the one envelope every connector speaks on stdout, one JSON per line.

A source answers ``spec`` with a SPEC message, ``check`` with CONNECTION_STATUS,
``discover`` with CATALOG and ``read`` with RECORD, STATE, LOG and TRACE messages.
:class:`AirbyteMessage` is that envelope; its ``type`` names the one payload field that
must be set (``RECORD`` -> ``record``, ``CONNECTION_STATUS`` -> ``connectionStatus``...).

:meth:`AirbyteMessage.to_json_line` and :meth:`AirbyteMessage.parse_line` are the two
ends of the pipe: what Headwater's sources write and what it reads from Airbyte
connectors.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Self

from pydantic import ValidationError, model_validator

from headwater.errors import ConnectorError
from headwater.protocol._base import ProtocolModel
from headwater.protocol._catalog import AirbyteCatalog, DestinationSyncMode
from headwater.protocol._state import AirbyteStateMessage, StreamDescriptor

#: How much of a rejected line an error shows: enough to recognise it, short enough
#: not to flood a log with a multi-megabyte record.
_EXCERPT_CHARS = 120


class RecordChange(StrEnum):
    """What happened to a field of a record on its way (Airbyte's ``Change``)."""

    NULLED = "NULLED"
    TRUNCATED = "TRUNCATED"


class RecordChangeReason(StrEnum):
    """Why a field of a record was changed (Airbyte's ``Reason``)."""

    SOURCE_RECORD_SIZE_LIMITATION = "SOURCE_RECORD_SIZE_LIMITATION"
    DESTINATION_RECORD_SIZE_LIMITATION = "DESTINATION_RECORD_SIZE_LIMITATION"
    PLATFORM_RECORD_SIZE_LIMITATION = "PLATFORM_RECORD_SIZE_LIMITATION"
    SOURCE_FIELD_SIZE_LIMITATION = "SOURCE_FIELD_SIZE_LIMITATION"
    DESTINATION_FIELD_SIZE_LIMITATION = "DESTINATION_FIELD_SIZE_LIMITATION"
    PLATFORM_FIELD_SIZE_LIMITATION = "PLATFORM_FIELD_SIZE_LIMITATION"
    SOURCE_SERIALIZATION_ERROR = "SOURCE_SERIALIZATION_ERROR"
    DESTINATION_SERIALIZATION_ERROR = "DESTINATION_SERIALIZATION_ERROR"
    PLATFORM_SERIALIZATION_ERROR = "PLATFORM_SERIALIZATION_ERROR"
    SOURCE_RETRIEVAL_ERROR = "SOURCE_RETRIEVAL_ERROR"
    DESTINATION_TYPECAST_ERROR = "DESTINATION_TYPECAST_ERROR"


class AirbyteRecordMessageMetaChange(ProtocolModel):
    """One field of a record that was changed, e.g. nulled because it did not fit its type."""

    field: str
    change: RecordChange
    reason: RecordChangeReason


class AirbyteRecordMessageMeta(ProtocolModel):
    """What happened to a record mid-sync; a changed value is recorded, never dropped silently."""

    changes: list[AirbyteRecordMessageMetaChange] | None = None


class AirbyteRecordMessage(ProtocolModel):
    """One record of one stream.

    ``None`` values inside ``data`` are kept when dumping with ``exclude_none``: a null
    column is data, unlike an absent optional field of the envelope.
    """

    stream: str
    data: dict[str, Any]
    #: Milliseconds since the epoch, when the source emitted the record.
    emitted_at: int
    namespace: str | None = None
    meta: AirbyteRecordMessageMeta | None = None


class LogLevel(StrEnum):
    """Level of a LOG message (Airbyte's ``Level``)."""

    FATAL = "FATAL"
    ERROR = "ERROR"
    WARN = "WARN"
    INFO = "INFO"
    DEBUG = "DEBUG"
    TRACE = "TRACE"


class AirbyteLogMessage(ProtocolModel):
    """A log line a connector wants the platform to show."""

    level: LogLevel
    message: str
    stack_trace: str | None = None


class TraceType(StrEnum):
    """Kind of TRACE message; Headwater models ERROR and STREAM_STATUS payloads.

    ESTIMATE and ANALYTICS payloads pass through as extra fields (kept as plain dicts).
    """

    ERROR = "ERROR"
    ESTIMATE = "ESTIMATE"
    STREAM_STATUS = "STREAM_STATUS"
    ANALYTICS = "ANALYTICS"


class FailureType(StrEnum):
    """Who must act on an error: a bug (system), the user (config), or nobody yet (transient)."""

    system_error = "system_error"
    config_error = "config_error"
    transient_error = "transient_error"


class AirbyteErrorTraceMessage(ProtocolModel):
    """The error that ended a sync or a stream.

    ``message`` is for the user; ``internal_message`` and ``stack_trace`` for whoever
    debugs the connector.
    """

    message: str
    internal_message: str | None = None
    stack_trace: str | None = None
    failure_type: FailureType | None = None
    #: The stream that failed, when the error belongs to one.
    stream_descriptor: StreamDescriptor | None = None


class AirbyteStreamStatus(StrEnum):
    """Where a stream is in a sync."""

    STARTED = "STARTED"
    RUNNING = "RUNNING"
    COMPLETE = "COMPLETE"
    INCOMPLETE = "INCOMPLETE"


class AirbyteStreamStatusTraceMessage(ProtocolModel):
    """A stream moved to a new status."""

    stream_descriptor: StreamDescriptor
    status: AirbyteStreamStatus


class AirbyteTraceMessage(ProtocolModel):
    """Information about a sync that is not data: an error or a stream's status."""

    type: TraceType
    #: Milliseconds since the epoch; a float in the protocol, unlike a record's.
    emitted_at: float
    error: AirbyteErrorTraceMessage | None = None
    stream_status: AirbyteStreamStatusTraceMessage | None = None


class ConnectorSpecification(ProtocolModel):
    """The answer to ``spec``: the JSON Schema a connector's config must validate against.

    Fields secret to the user are marked ``"airbyte_secret": true`` inside
    ``connectionSpecification``.  ``supportsNormalization`` and ``supportsDBT`` default
    to ``False`` as in Airbyte's models, so a spec reads the same after a round trip.
    """

    connectionSpecification: dict[str, Any]
    documentationUrl: str | None = None
    changelogUrl: str | None = None
    #: Deprecated in the protocol; the catalog's ``supported_sync_modes`` is what counts.
    supportsIncremental: bool | None = None
    supportsNormalization: bool | None = False
    supportsDBT: bool | None = False
    supported_destination_sync_modes: list[DestinationSyncMode] | None = None
    protocol_version: str | None = None


class CheckStatus(StrEnum):
    """Result of ``check`` (Airbyte's ``Status``)."""

    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"


class AirbyteConnectionStatus(ProtocolModel):
    """The answer to ``check``; ``message`` says what failed, in words for the user."""

    status: CheckStatus
    message: str | None = None


class OrchestratorType(StrEnum):
    """Kind of CONTROL message."""

    CONNECTOR_CONFIG = "CONNECTOR_CONFIG"


class AirbyteControlConnectorConfigMessage(ProtocolModel):
    """A config the connector changed itself (e.g. a refreshed OAuth token) to persist."""

    config: dict[str, Any]


class AirbyteControlMessage(ProtocolModel):
    """A request from the connector to the platform, such as saving an updated config."""

    type: OrchestratorType
    emitted_at: float
    connectorConfig: AirbyteControlConnectorConfigMessage | None = None


class MessageType(StrEnum):
    """Type of an :class:`AirbyteMessage`, naming its payload field (Airbyte's ``Type``)."""

    RECORD = "RECORD"
    STATE = "STATE"
    LOG = "LOG"
    SPEC = "SPEC"
    CONNECTION_STATUS = "CONNECTION_STATUS"
    CATALOG = "CATALOG"
    TRACE = "TRACE"
    CONTROL = "CONTROL"


_PAYLOAD_FIELD: dict[MessageType, str] = {
    MessageType.RECORD: "record",
    MessageType.STATE: "state",
    MessageType.LOG: "log",
    MessageType.SPEC: "spec",
    MessageType.CONNECTION_STATUS: "connectionStatus",
    MessageType.CATALOG: "catalog",
    MessageType.TRACE: "trace",
    MessageType.CONTROL: "control",
}


class AirbyteMessage(ProtocolModel):
    """The envelope of every message; ``type`` says which payload field is set.

    Guarantee: a valid message has the payload its ``type`` names (a ``RECORD`` message
    has ``record``), so readers can rely on it after checking ``type``.  Other payload
    fields are not forbidden, as in Airbyte.

    >>> line = '{"type":"LOG","log":{"level":"INFO","message":"hi"}}'
    >>> AirbyteMessage.parse_line(line).log.message
    'hi'
    """

    type: MessageType
    record: AirbyteRecordMessage | None = None
    state: AirbyteStateMessage | None = None
    log: AirbyteLogMessage | None = None
    spec: ConnectorSpecification | None = None
    connectionStatus: AirbyteConnectionStatus | None = None
    catalog: AirbyteCatalog | None = None
    trace: AirbyteTraceMessage | None = None
    control: AirbyteControlMessage | None = None

    @model_validator(mode="after")
    def _has_its_payload(self) -> Self:
        field = _PAYLOAD_FIELD[self.type]
        if getattr(self, field) is None:
            raise ValueError(f"a {self.type.value} message needs the field {field!r}")
        return self

    def to_json_line(self) -> str:
        """This message as one compact line of JSON, without ``None`` fields or a newline."""
        return self.model_dump_json(exclude_none=True)

    @classmethod
    def parse_line(cls, line: str) -> AirbyteMessage:
        """Parse one line a connector wrote to stdout.

        Raises :class:`~headwater.errors.ConnectorError` when the line is not JSON or
        not a valid message; the error names the first problem and shows the start of
        the line (``line=`` in its context), never the whole of a long line.
        """
        try:
            return cls.model_validate_json(line)
        except ValidationError as exc:
            raise ConnectorError(
                f"not an Airbyte message: {_first_problem(exc)}", line=_excerpt(line)
            ) from exc


def _first_problem(exc: ValidationError) -> str:
    problem = exc.errors(include_url=False, include_input=False)[0]
    where = ".".join(str(part) for part in problem["loc"])
    return f"{where}: {problem['msg']}" if where else problem["msg"]


def _excerpt(line: str) -> str:
    line = line.strip()
    if len(line) <= _EXCERPT_CHARS:
        return line
    return line[:_EXCERPT_CHARS] + "..."
