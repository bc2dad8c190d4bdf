"""Destinations: where streams land.  Delta Lake is the default and the reference."""

from __future__ import annotations

from typing import Any

from headwater.destinations._base import (
    CommitMarker,
    CommitResult,
    Destination,
    DestinationCapabilities,
    SparkRequirements,
)
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


def build_destination(type_name: str, config: Any, *,
                      where: str = "destination.config") -> Destination:
    """The configured destination of ``destination.type`` (the twin of ``build_source``):
    its config validated against its spec, its secrets registered for masking."""
    from headwater.config import register_secrets, secret_values, validate_config

    cls = get_destination_class(type_name)
    validated = validate_config(cls.spec(), config, where=where)
    register_secrets(secret_values(cls.spec(), validated))
    return cls(validated)


def spark_requirements(type_names: Any = None) -> SparkRequirements:
    """What sessions for ``type_names`` (default: every built-in destination) need."""
    names = list(_BUILT_IN) if type_names is None else list(type_names)
    needs = SparkRequirements()
    for name in names:
        needs = needs.merged(get_destination_class(name).capabilities.spark)
    return needs


__all__ = ["CommitMarker", "CommitResult", "DeltaDestination", "Destination",
           "DestinationCapabilities", "SparkRequirements", "build_destination",
           "get_destination_class", "spark_requirements"]
