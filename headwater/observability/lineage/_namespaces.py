"""Dataset namespaces of a connection's source and destination, without credentials.

OpenLineage names a dataset by ``(namespace, name)``; a namespace says where the
data lives (``postgres://db.internal:5432``, ``s3://bucket``), so that two jobs
reading the same place meet on one dataset.  A source's config is read for the
fields that say where (``url``, ``base_url``, ``host``/``port``, ``bucket``,
``package``; Kafka's first ``bootstrap_servers`` entry, as OpenLineage's naming
spec has it: ``kafka://broker:9092``), and only the scheme, host, port and path
are kept: user names, passwords, query strings (tokens) and fragments never
reach an event.  A destination says where it writes itself
(``Destination.dataset_namespace`` and ``dataset_name``): no config key names
are guessed for it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from headwater.destinations._dataset import without_credentials

if TYPE_CHECKING:
    from headwater.destinations import Destination


def source_namespace(source_type: str, config: Mapping[str, Any]) -> str:
    """Where the source reads from, for its input datasets (see the module docstring)."""
    for key in ("url", "base_url"):
        value = config.get(key)
        if isinstance(value, str) and value:
            return without_credentials(value)
    host = config.get("host")
    if isinstance(host, str) and host:
        port = config.get("port")
        database = config.get("database")
        where = f"{source_type}://{host}" + (f":{port}" if port else "")
        return without_credentials(where + (f"/{database}" if database else ""))
    brokers = config.get("bootstrap_servers")
    if isinstance(brokers, str) and brokers.strip():
        return without_credentials(f"kafka://{brokers.split(',')[0].strip()}")
    bucket = config.get("bucket")
    if isinstance(bucket, str) and bucket:
        return without_credentials(f"{source_type}://{bucket}")
    package = config.get("package")
    if isinstance(package, str) and package:
        return f"{source_type}://{package}"
    # A source with no place of its own (``sample`` makes its rows up).
    return f"{source_type}://"


def destination_namespace(destination: Destination, streams: Sequence[str]) -> str:
    """Where the destination writes, as the destination itself says
    (:meth:`~headwater.destinations.Destination.dataset_namespace`); the first
    stream's table location when it does not say."""
    said = destination.dataset_namespace()
    if said:
        return said
    return without_credentials(destination.table_location(streams[0]) if streams else "")


__all__ = ["destination_namespace", "source_namespace", "without_credentials"]
