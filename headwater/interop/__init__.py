"""Airbyte interoperability: serve Headwater sources over the protocol, migrate state."""

from headwater.interop._serve import AirbyteServer
from headwater.interop._state_migration import (
    SHARED_STATE_STREAM,
    ImportedState,
    export_state,
    parse_airbyte_state,
)

__all__ = [
    "SHARED_STATE_STREAM",
    "AirbyteServer",
    "ImportedState",
    "export_state",
    "parse_airbyte_state",
]
