"""Move state between an Airbyte connection and a Headwater connection.

Airbyte keeps a connection's state in one of two shapes, and both come in two
spellings (the protocol's STATE messages, and the Airbyte API's connection
state document):

* per stream (``STREAM`` / ``stateType: stream``): one state per stream;
* global (``GLOBAL`` / ``stateType: global``): a ``shared_state`` (say a CDC log
  position) plus each stream's part.

Headwater stores one state per (connection, stream).  Import stores each
stream's part unchanged, so an incremental stream picks up exactly where the
Airbyte connection stopped (for the ``airbyte`` source type the state is the
connector's own; for a native source, its cursor reads Airbyte's sequential
form ``{cursor_field: value}``).

A GLOBAL state is stored in one of two ways:

* for the ``airbyte`` source type, each stream keeps the shared part with its
  own (:func:`~headwater.protocol.global_stream_state`), which is also what a
  sync stores when the connector reports GLOBAL state, so the stream's next read
  hands the connector a GLOBAL state again;
* for native sources, which have no use for the shared part, each stream keeps
  its part and the ``shared_state`` is kept under the reserved stream name
  :data:`SHARED_STATE_STREAM`.

Export turns either back into ``GLOBAL`` messages (one per distinct shared part:
streams read by separate connector processes may have reached different
positions); other streams become ``STREAM`` messages.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from headwater.errors import StateError
from headwater.protocol import (
    AirbyteGlobalState,
    AirbyteStateMessage,
    AirbyteStateType,
    AirbyteStreamState,
    StreamDescriptor,
    global_stream_state,
    split_global_stream_state,
)

__all__ = ["SHARED_STATE_STREAM", "ImportedState", "export_state", "parse_airbyte_state"]

#: Where a GLOBAL state's ``shared_state`` lives in Headwater's state store.
SHARED_STATE_STREAM = "__airbyte_global__"


@dataclass
class ImportedState:
    """Airbyte state read into Headwater's shape: stream name -> state."""

    streams: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    shared: dict[str, Any] | None = None
    kind: str = "STREAM"
    #: Stream -> the shared part of the GLOBAL message that named it.
    shared_of: dict[str, dict[str, Any] | None] = field(default_factory=dict)

    def per_stream(self, *, shared_with_streams: bool = False,
                   ) -> dict[str, dict[str, Any] | None]:
        """What to store: every stream's state, plus the shared part of a GLOBAL state.

        ``shared_with_streams`` (the ``airbyte`` source type): a stream named by a
        GLOBAL message keeps that message's shared part with its own, as a sync of a
        GLOBAL-state connector stores it; otherwise the shared part is stored once,
        under :data:`SHARED_STATE_STREAM`.
        """
        if shared_with_streams:
            return {name: global_stream_state(self.shared_of[name], state)
                    if name in self.shared_of else state
                    for name, state in self.streams.items()}
        stored = dict(self.streams)
        if self.kind == "GLOBAL":
            stored[SHARED_STATE_STREAM] = self.shared or {}
        return stored


def parse_airbyte_state(document: Any) -> ImportedState:
    """Read STATE messages (a list, one message) or an Airbyte API connection state."""
    if isinstance(document, Mapping) and "stateType" in document:
        return _from_api(document)
    messages = document if isinstance(document, list) else [document]
    imported = ImportedState()
    for number, raw in enumerate(messages):
        try:
            message = AirbyteStateMessage.model_validate(raw)
        except ValidationError as exc:
            raise StateError(f"state message {number} is not an Airbyte state message: "
                             f"{exc.errors()[0]['msg']}") from exc
        if message.type == AirbyteStateType.STREAM and message.stream is not None:
            imported.streams[_name(message.stream.stream_descriptor)] = \
                message.stream.stream_state
        elif message.type == AirbyteStateType.GLOBAL and message.global_ is not None:
            imported.kind = "GLOBAL"
            imported.shared = message.global_.shared_state
            for part in message.global_.stream_states:
                imported.streams[_name(part.stream_descriptor)] = part.stream_state
                imported.shared_of[_name(part.stream_descriptor)] = imported.shared
        else:
            raise StateError(
                f"state message {number} is a LEGACY (per-source) state; only STREAM and "
                "GLOBAL states name their streams, so Headwater cannot import it")
    return imported


def _from_api(document: Mapping[str, Any]) -> ImportedState:
    kind = str(document["stateType"]).lower()
    if kind == "stream":
        parts = document.get("streamState") or []
        return ImportedState(streams={_api_name(p): p.get("streamState") for p in parts})
    if kind == "global":
        glob = document.get("globalState") or {}
        streams = {_api_name(p): p.get("streamState") for p in glob.get("streamStates") or []}
        shared = glob.get("sharedState")
        return ImportedState(streams=streams, shared=shared, kind="GLOBAL",
                             shared_of=dict.fromkeys(streams, shared))
    raise StateError(f"an Airbyte connection state of type {kind!r} cannot be imported; "
                     "only 'stream' and 'global' states name their streams")


def _api_name(part: Mapping[str, Any]) -> str:
    descriptor = part.get("streamDescriptor") or {}
    return _name(StreamDescriptor(name=descriptor["name"],
                                  namespace=descriptor.get("namespace")))


def _name(descriptor: StreamDescriptor) -> str:
    # Headwater's stream names are unique within a connection; namespaces are not used.
    return descriptor.name


def export_state(states: Mapping[str, Mapping[str, Any] | None]) -> list[dict[str, Any]]:
    """Headwater's stored states as Airbyte STATE messages.

    Streams that keep a shared part, and every stream when a shared part was
    imported under :data:`SHARED_STATE_STREAM`, go into ``GLOBAL`` messages, one
    per distinct shared part (in the common case, exactly one); the rest into
    ``STREAM`` messages.
    """
    imported_shared = states.get(SHARED_STATE_STREAM)
    groups: dict[str, tuple[dict[str, Any] | None, list[AirbyteStreamState]]] = {}
    if SHARED_STATE_STREAM in states:
        shared = dict(imported_shared) if imported_shared else None
        groups[_key(shared)] = (shared, [])
    streams: list[AirbyteStreamState] = []
    for name, state in sorted(states.items()):
        if name == SHARED_STATE_STREAM:
            continue
        parts = split_global_stream_state(state)
        if parts is None and SHARED_STATE_STREAM not in states:
            streams.append(_part(name, state))
            continue
        shared, own = parts if parts is not None else (
            dict(imported_shared) if imported_shared else None, state)
        groups.setdefault(_key(shared), (shared, []))[1].append(_part(name, own))
    messages = [AirbyteStateMessage(type=AirbyteStateType.GLOBAL, global_=AirbyteGlobalState(
        shared_state=shared, stream_states=parts)) for shared, parts in groups.values()]
    messages += [AirbyteStateMessage(type=AirbyteStateType.STREAM, stream=part)
                 for part in streams]
    return [message.model_dump(mode="json", by_alias=True, exclude_none=True)
            for message in messages]


def _part(name: str, state: Mapping[str, Any] | None) -> AirbyteStreamState:
    return AirbyteStreamState(stream_descriptor=StreamDescriptor(name=name),
                              stream_state=dict(state) if state is not None else None)


def _key(shared: Mapping[str, Any] | None) -> str:
    return json.dumps(shared, sort_keys=True, default=str)
