"""Catalog models: what a source offers (``discover``) and what a connection reads.

A source answers ``discover`` with an :class:`AirbyteCatalog`; the connection file picks
streams and sync modes from it, which the engine hands back to the source as a
:class:`ConfiguredAirbyteCatalog` for ``read``.  Field paths (cursor field, primary
key) are lists of keys into nested records, as in Airbyte: ``[["id"]]`` is one top-level
key column, ``[["account", "id"], ["day"]]`` a composite key with a nested part.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from headwater.protocol._base import ProtocolModel
from headwater.sync_modes import DestinationSyncMode, SyncMode


class AirbyteStream(ProtocolModel):
    """One stream as a source describes it in ``discover``."""

    name: str
    json_schema: dict[str, Any]
    #: Never empty: a stream that cannot be read in any mode is not a stream.
    supported_sync_modes: list[SyncMode] = Field(min_length=1)
    #: True when the source decides the cursor field and a user's choice is ignored.
    source_defined_cursor: bool | None = None
    default_cursor_field: list[str] | None = None
    source_defined_primary_key: list[list[str]] | None = None
    namespace: str | None = None
    #: True when a sync interrupted mid-stream can resume from its last state.
    is_resumable: bool | None = None


class AirbyteCatalog(ProtocolModel):
    """The answer to ``discover``: every stream the source can read."""

    streams: list[AirbyteStream]


class ConfiguredAirbyteStream(ProtocolModel):
    """One stream chosen for a connection, with the sync mode it runs in.

    ``cursor_field`` is required by the protocol for ``incremental`` and ``primary_key``
    for ``append_dedup``; the engine checks that, the model only carries the values.
    """

    stream: AirbyteStream
    sync_mode: SyncMode
    destination_sync_mode: DestinationSyncMode
    cursor_field: list[str] | None = None
    primary_key: list[list[str]] | None = None


class ConfiguredAirbyteCatalog(ProtocolModel):
    """The streams a ``read`` must produce, in the modes the connection chose."""

    streams: list[ConfiguredAirbyteStream]
