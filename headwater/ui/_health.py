"""The health (valid, late, stale) of every connection file of the page's folder.

Read here, judged by :mod:`headwater.observability.health`: the list, the connection
page and ``/metrics`` take it from the same reading.  A file that does not validate
opens no store; a store that does not answer leaves its connections' lateness and
staleness unknown (no figure), never "fine".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from headwater.errors import MetadataStoreError
from headwater.metadata_store import RunSummary
from headwater.observability.health import ConnectionHealth, connection_health
from headwater.ui._folder import ConnectionFile, ConnectionFolder


def health_of(folder: ConnectionFolder, connection: ConnectionFile, now: datetime,
              recent: Sequence[RunSummary] | None) -> ConnectionHealth:
    """``connection``'s health; ``recent``: its newest runs (newest first), ``None`` when
    its store did not answer."""
    states = None
    if connection.valid and recent is not None:
        store = folder.store_for(connection)
        try:  # a store no sync wrote yet has no state: a scheduled connection may be late
            states = {} if store.missing else store.get_states(connection.name)
        except MetadataStoreError:
            states = None
    return connection_health(connection.name, connection.config, valid=connection.valid,
                             last_started=recent[0].started_at if recent else None,
                             known_since=connection.modified_at, states=states, now=now)


def folder_health(folder: ConnectionFolder, connections: Sequence[ConnectionFile],
                  recent: Mapping[str, Sequence[RunSummary]], unread: Mapping[str, str],
                  now: datetime) -> list[ConnectionHealth]:
    """Every file's health, from the runs the caller read (``unread``: the connections
    whose store did not answer)."""
    return [health_of(folder, c, now, None if c.name in unread else recent.get(c.name, []))
            for c in connections]
