"""Source connectors by type name: the built-ins and every installed plugin.

A connection file names its source with ``source.type``; this module turns
that name into the :class:`~headwater.sdk.Source` class.  Built-ins come first,
so an installed package can never replace one; other packages register a
source under the ``headwater.sources`` entry point group::

    [project.entry-points."headwater.sources"]
    my_api = "my_package:MyApiSource"

Classes are imported only when asked for, so listing types stays cheap.
"""

from __future__ import annotations

from importlib.metadata import EntryPoint, entry_points

from headwater.errors import ConfigError, ConnectorError
from headwater.sdk import Source

__all__ = ["SOURCE_ENTRY_POINT_GROUP", "get_source_class", "source_types"]

#: The entry point group installed packages register their sources under.
SOURCE_ENTRY_POINT_GROUP = "headwater.sources"

_BUILT_INS = {
    "sample": "headwater.connectors.sample:SampleSource",
    "object_storage": "headwater.connectors.object_storage:ObjectStorageSource",
    "rest": "headwater.connectors.rest:RestSource",
    "postgres": "headwater.connectors.postgres:PostgresSource",
    "airbyte": "headwater.connectors.airbyte:AirbyteSource",
}


def source_types() -> list[str]:
    """Every known source type name, sorted: built-ins and installed entry points."""
    return sorted(_BUILT_INS.keys() | _installed().keys())


def get_source_class(type_name: str) -> type[Source]:
    """The source class registered as ``type_name``.

    Raises :class:`~headwater.errors.ConfigError` listing the known types when
    nothing is registered under that name, and
    :class:`~headwater.errors.ConnectorError` when a registered class cannot be
    imported or is not a ``Source``.
    """
    if type_name in _BUILT_INS:
        entry = EntryPoint(type_name, _BUILT_INS[type_name], SOURCE_ENTRY_POINT_GROUP)
    else:
        installed = _installed()
        if type_name not in installed:
            known = ", ".join(source_types())
            raise ConfigError(
                f"unknown source type {type_name!r}; known types: {known}", field="source.type"
            )
        entry = installed[type_name]
    try:
        loaded = entry.load()
    except Exception as exc:  # a broken plugin may raise anything while importing
        raise ConnectorError(
            f"source type {type_name!r} ({entry.value}) could not be imported: {exc}",
            field="source.type",
        ) from exc
    if not (isinstance(loaded, type) and issubclass(loaded, Source)):
        raise ConnectorError(
            f"source type {type_name!r} points at {entry.value}, which is not a "
            "headwater.sdk.Source subclass",
            field="source.type",
        )
    return loaded


def _installed() -> dict[str, EntryPoint]:
    return {entry.name: entry for entry in entry_points(group=SOURCE_ENTRY_POINT_GROUP)}
