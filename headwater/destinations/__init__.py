"""Destinations: where streams land.  Delta Lake is the default and the reference."""

from __future__ import annotations

from headwater.destinations._base import CommitMarker, CommitResult, Destination
from headwater.destinations.delta import DeltaDestination
from headwater.errors import ConfigError

_BUILT_IN: dict[str, type[Destination]] = {DeltaDestination.type_name: DeltaDestination}


def get_destination_class(type_name: str) -> type[Destination]:
    """The destination class for ``destination.type`` in a connection file."""
    try:
        return _BUILT_IN[type_name]
    except KeyError:
        known = ", ".join(sorted(_BUILT_IN))
        raise ConfigError(f"unknown destination type {type_name!r}; known types: {known}",
                          field="destination.type") from None


__all__ = ["CommitMarker", "CommitResult", "DeltaDestination", "Destination",
           "get_destination_class"]
