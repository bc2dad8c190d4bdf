"""How a destination's tables are named as datasets (OpenLineage's ``namespace``/``name``).

Why here, below the engine and observability: each destination knows where it
keeps its tables (a folder, a warehouse, a database server) and what reads
them by; lineage and metrics ask it (:meth:`Destination.dataset_namespace`,
:meth:`Destination.dataset_name`) instead of guessing from config key names
that a new destination may not share.  A namespace keeps only the scheme,
host, port and path of a location: user names, passwords, query strings
(tokens) and fragments never reach an event.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit


def without_credentials(location: str) -> str:
    """``location`` as ``scheme://host[:port]/path``: no user, password, query or fragment.

    A plain path becomes an absolute ``file://`` URL.

    >>> without_credentials("https://bob:pw@api.example.com:8443/v2?token=x#top")
    'https://api.example.com:8443/v2'
    >>> without_credentials("s3://AKIA:secret@bucket/raw/")
    's3://bucket/raw'
    """
    from headwater.config import mask

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


def name_within(namespace: str, location: str, name: str | None) -> str:
    """A table's dataset name: its catalog name, else its location under ``namespace``
    (``users`` under ``file:///lake``), else its whole location."""
    if name:
        return name
    where = without_credentials(location) if "://" in location or "/" in location \
        else location
    if where.startswith(namespace + "/"):
        return where[len(namespace) + 1:]
    return where


__all__ = ["name_within", "without_credentials"]
