"""Destinations by type name: the built-ins and every installed plugin.

Delta Lake is the default and the reference.  A connection file names its
destination with ``destination.type``; built-ins come first, so an installed
package can never replace one; other packages register a destination under
the ``headwater.destinations`` entry point group (as sources do under
``headwater.sources``)::

    [project.entry-points."headwater.destinations"]
    my_store = "my_package:MyDestination"

Classes are imported only when asked for.  What the engine may rely on is in
each class's :class:`DestinationCapabilities`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from headwater._plugins import load_registered, registered_types
from headwater.destinations._base import (
    CommitMarker,
    CommitResult,
    Destination,
    DestinationCapabilities,
    SparkRequirements,
)

#: The entry point group installed packages register their destinations under.
DESTINATION_ENTRY_POINT_GROUP = "headwater.destinations"

_BUILT_INS = {
    "delta": "headwater.destinations.delta:DeltaDestination",
    "iceberg": "headwater.destinations.iceberg:IcebergDestination",
    "files": "headwater.destinations.files:FilesDestination",
    "postgres": "headwater.destinations.postgres:PostgresDestination",
    "kafka": "headwater.destinations.kafka:KafkaDestination",
}


def destination_types() -> list[str]:
    """Every known destination type name, sorted: built-ins and installed entry points."""
    return registered_types(_BUILT_INS, DESTINATION_ENTRY_POINT_GROUP)


def get_destination_class(type_name: str) -> type[Destination]:
    """The destination class for ``destination.type`` in a connection file."""
    return load_registered(type_name, _BUILT_INS, DESTINATION_ENTRY_POINT_GROUP, Destination,
                           kind="destination", base_name="headwater.destinations.Destination")


def build_destination(type_name: str, config: Any, *,
                      where: str = "destination.config") -> Destination:
    """The configured destination of ``destination.type`` (the twin of ``build_source``):
    its config validated against its spec, its secrets registered for masking."""
    from headwater.config import register_secrets, secret_values, validate_config

    cls = get_destination_class(type_name)
    # Registered from the raw config first, so even a validation error that quotes a
    # value cannot show one (as build_source does).
    if isinstance(config, Mapping):
        register_secrets(secret_values(cls.spec(), config))
    validated = validate_config(cls.spec(), config, where=where)
    register_secrets(secret_values(cls.spec(), validated))
    return cls(validated)


def table_properties_refusal(type_name: str, properties: Mapping[str, str]) -> str | None:
    """Why a ``type_name`` destination cannot honour a stream's ``table_properties`` (None:
    it can): what ``headwater validate`` and every sync's start refuse."""
    if not properties:
        return None
    return get_destination_class(type_name).table_property_refusal(properties)


def spark_requirements(type_names: Any = None) -> SparkRequirements:
    """What sessions for ``type_names`` (default: every built-in destination) need."""
    names = list(_BUILT_INS) if type_names is None else list(type_names)
    needs = SparkRequirements()
    for name in names:
        needs = needs.merged(get_destination_class(name).capabilities.spark)
    return needs


__all__ = ["DESTINATION_ENTRY_POINT_GROUP", "CommitMarker", "CommitResult", "Destination",
           "DestinationCapabilities", "SparkRequirements", "build_destination",
           "destination_types", "get_destination_class", "spark_requirements",
           "table_properties_refusal"]
