"""Dataset namespaces of a connection's source and destination, without credentials.

OpenLineage names a dataset by ``(namespace, name)``; a namespace says where the
data lives (``postgres://db.internal:5432``, ``s3://bucket``), so that two jobs
reading the same place meet on one dataset.  A source's config is read for the
fields that say where (``url``, ``base_url``, ``host``/``port``, ``bucket``,
``package``), and only the scheme, host, port and path are kept: user names,
passwords, query strings (tokens) and fragments never reach an event.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from headwater.config import mask


def without_credentials(location: str) -> str:
    """``location`` as ``scheme://host[:port]/path``: no user, password, query or fragment.

    A plain path becomes an absolute ``file://`` URL.

    >>> without_credentials("https://bob:pw@api.example.com:8443/v2?token=x#top")
    'https://api.example.com:8443/v2'
    >>> without_credentials("s3://AKIA:secret@bucket/raw/")
    's3://bucket/raw'
    """
    if "://" not in location:
        return Path(location).expanduser().resolve().as_uri()
    parts = urlsplit(location)
    host = parts.hostname or ""
    try:
        port = parts.port
    except ValueError:  # a port that is not a number: keep none rather than guess
        port = None
    where = f"{host}:{port}" if port else host
    path = parts.path.rstrip("/")
    # mask: a secret registered elsewhere never shows, even inside a path.
    return mask(f"{parts.scheme}://{where}{path}")


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
    bucket = config.get("bucket")
    if isinstance(bucket, str) and bucket:
        return without_credentials(f"{source_type}://{bucket}")
    package = config.get("package")
    if isinstance(package, str) and package:
        return f"{source_type}://{package}"
    # A source with no place of its own (``sample`` makes its rows up).
    return f"{source_type}://"


def destination_namespace(config: Mapping[str, Any], location: str) -> str:
    """Where the destination writes: its ``path``, ``warehouse`` or catalog ``uri``.

    ``location`` (the first stream's table location) stands in when the config
    names none of them.
    """
    for key in ("path", "warehouse", "uri", "catalog_uri"):
        value = config.get(key)
        if isinstance(value, str) and value:
            return without_credentials(value)
    return without_credentials(location)


def table_name(namespace: str, location: str, name: str | None) -> str:
    """The output dataset's name: the table's catalog name, else its location under
    ``namespace`` (``users`` under ``file:///lake``), else its whole location."""
    if name:
        return name
    where = without_credentials(location) if "://" in location or "/" in location \
        else location
    if where.startswith(namespace + "/"):
        return where[len(namespace) + 1:]
    return where


__all__ = ["destination_namespace", "source_namespace", "table_name", "without_credentials"]
