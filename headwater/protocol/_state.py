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

from collections.abc import Mapping
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


#: Key of the state Headwater stores for one stream of a connector that keeps GLOBAL
#: state: ``{GLOBAL_STATE_KEY: {"shared_state": ..., "stream_state": ...}}``.  Headwater
#: reads each stream in its own connector process, so each stream keeps the shared part
#: (say a CDC log position) as *its* process last reported it, and its next read hands
#: the connector a GLOBAL state again.  The same name as the reserved stream of an
#: imported shared state (``headwater.interop.SHARED_STATE_STREAM``).
GLOBAL_STATE_KEY = "__airbyte_global__"


def global_stream_state(shared_state: Mapping[str, Any] | None,
                        stream_state: Mapping[str, Any] | None) -> dict[str, Any]:
    """One stream's stored state when its connector keeps GLOBAL state.

    See :data:`GLOBAL_STATE_KEY`.
    """
    return {GLOBAL_STATE_KEY: {
        "shared_state": dict(shared_state) if shared_state is not None else None,
        "stream_state": dict(stream_state) if stream_state is not None else None}}


def split_global_stream_state(
        state: Mapping[str, Any] | None,
) -> tuple[dict[str, Any] | None, dict[str, Any] | None] | None:
    """``(shared_state, stream_state)`` of a :func:`global_stream_state`, else ``None``."""
    if not isinstance(state, Mapping) or set(state) != {GLOBAL_STATE_KEY}:
        return None
    inner = state[GLOBAL_STATE_KEY]
    if not isinstance(inner, Mapping):
        return None
    shared, own = inner.get("shared_state"), inner.get("stream_state")
    return (dict(shared) if isinstance(shared, Mapping) else None,
            dict(own) if isinstance(own, Mapping) else None)


def global_state_message(
    name: str,
    shared_state: Mapping[str, Any] | None,
    stream_state: Mapping[str, Any] | None,
    namespace: str | None = None,
) -> AirbyteStateMessage:
    """A ``GLOBAL`` state message of one stream: the shared part plus that stream's part."""
    return AirbyteStateMessage(
        type=AirbyteStateType.GLOBAL,
        global_=AirbyteGlobalState(
            shared_state=dict(shared_state) if shared_state is not None else None,
            stream_states=[AirbyteStreamState(
                stream_descriptor=StreamDescriptor(name=name, namespace=namespace),
                stream_state=dict(stream_state) if stream_state is not None else None)]),
    )
