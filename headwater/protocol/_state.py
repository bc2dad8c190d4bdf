"""State models: where a stream (or a whole source) stopped, in Airbyte's format.

Headwater releases state only after the data it describes is committed (see
DESIGN.md, "Exactly once"); these models are the shape that state takes on the wire and
in the state store, so it can be imported from and exported to Airbyte unchanged.

Three kinds, as in the protocol:

- ``STREAM``: one message per stream, ``stream.stream_state`` is that stream's cursor.
- ``GLOBAL``: one message for all streams, for sources whose position is shared (a CDC
  log offset in ``shared_state``) with per-stream parts in ``stream_states``.
- ``LEGACY``: one free-form ``data`` dict for the whole source (old connectors).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import Field

from headwater.protocol._base import ProtocolModel


class StreamDescriptor(ProtocolModel):
    """Names a stream; ``namespace`` is the schema or database when the source has one."""

    name: str
    namespace: str | None = None


class AirbyteStreamState(ProtocolModel):
    """The state of one stream.

    ``stream_state`` is a free-form dict owned by the stream's cursor.  ``None`` values
    inside it are kept (Airbyte's own models drop them when dumping with
    ``exclude_none``; Headwater does not, so a null cursor survives a round trip).
    """

    stream_descriptor: StreamDescriptor
    stream_state: dict[str, Any] | None = None


class AirbyteGlobalState(ProtocolModel):
    """State shared by all streams of a source, plus each stream's own part."""

    shared_state: dict[str, Any] | None = None
    stream_states: list[AirbyteStreamState]


class AirbyteStateType(StrEnum):
    """Which of the three state shapes a message carries."""

    GLOBAL = "GLOBAL"
    STREAM = "STREAM"
    LEGACY = "LEGACY"


class AirbyteStateStats(ProtocolModel):
    """Record counts attached to a state message.

    Counts are floats on the wire (the protocol defines them as doubles so they never
    overflow), hence ``3.0`` and not ``3`` in the JSON.
    """

    recordCount: float | None = None
    rejectedRecordCount: float | None = None


class AirbyteStateMessage(ProtocolModel):
    """One state checkpoint: the position to resume from if the sync stops here.

    ``type`` is optional because connectors older than per-stream state sent only
    ``data``; such a message is treated as ``LEGACY``.  The ``global`` field is the
    attribute ``global_`` in Python and is written as ``global``.
    """

    type: AirbyteStateType | None = None
    stream: AirbyteStreamState | None = None
    global_: AirbyteGlobalState | None = Field(
        default=None, serialization_alias="global", validation_alias="global"
    )
    #: Deprecated in the protocol: the whole source's state for ``LEGACY`` messages.
    data: dict[str, Any] | None = None
    sourceStats: AirbyteStateStats | None = None
    destinationStats: AirbyteStateStats | None = None


def stream_state_message(
    name: str,
    state: dict[str, Any],
    namespace: str | None = None,
    record_count: float | None = None,
) -> AirbyteStateMessage:
    """Build the ``STREAM`` state message a source emits after a stream's checkpoint.

    ``record_count`` is the number of records emitted since the previous state message
    of this stream; it becomes ``sourceStats.recordCount`` so a destination can check
    that it received them all.

    Example: ``stream_state_message("users", {"updated_at": "2024-05-01"}, record_count=3)``
    dumps as ``{"type": "STREAM", "stream": {"stream_descriptor": {"name": "users"},
    "stream_state": {"updated_at": "2024-05-01"}}, "sourceStats": {"recordCount": 3.0}}``.
    """
    stats = None if record_count is None else AirbyteStateStats(recordCount=float(record_count))
    return AirbyteStateMessage(
        type=AirbyteStateType.STREAM,
        stream=AirbyteStreamState(
            stream_descriptor=StreamDescriptor(name=name, namespace=namespace),
            stream_state=state,
        ),
        sourceStats=stats,
    )
