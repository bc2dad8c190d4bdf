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

from headwater._plugins import load_registered, registered_types
from headwater.sdk import Source

__all__ = ["SOURCE_ENTRY_POINT_GROUP", "get_source_class", "source_types"]

#: The entry point group installed packages register their sources under.
SOURCE_ENTRY_POINT_GROUP = "headwater.sources"

_BUILT_INS = {
    "sample": "headwater.connectors.sample:SampleSource",
    "object_storage": "headwater.connectors.object_storage:ObjectStorageSource",
    "rest": "headwater.connectors.rest:RestSource",
    "postgres": "headwater.connectors.postgres:PostgresSource",
    "mysql": "headwater.connectors.mysql:MySQLSource",
    "airbyte": "headwater.connectors.airbyte:AirbyteSource",
    "kafka": "headwater.connectors.kafka:KafkaSource",
    "jdbc": "headwater.connectors.jdbc:JdbcSource",
}


def source_types() -> list[str]:
    """Every known source type name, sorted: built-ins and installed entry points."""
    return registered_types(_BUILT_INS, SOURCE_ENTRY_POINT_GROUP)


def get_source_class(type_name: str) -> type[Source]:
    """The source class registered as ``type_name``.

    Raises :class:`~headwater.errors.ConfigError` listing the known types when
    nothing is registered under that name, and
    :class:`~headwater.errors.ConnectorError` when a registered class cannot be
    imported or is not a ``Source``.
    """
    return load_registered(type_name, _BUILT_INS, SOURCE_ENTRY_POINT_GROUP, Source,
                           kind="source", base_name="headwater.sdk.Source")
