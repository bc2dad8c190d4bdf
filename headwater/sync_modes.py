"""The sync modes: the one vocabulary the connection file, the protocol, connectors,
the plan and the destinations share.

The Airbyte protocol's own enums, exported by :mod:`headwater.protocol` (and the
SDK, and the config): defined here, in a module of their own, because importing
``headwater.protocol`` loads its pydantic models (about 0.1 s), which every Spark
Python worker would pay for two enums through the SDK.  String enums, so a
value read from JSON or YAML compares equal to its member and serialises as the
protocol's own spelling.
"""

from __future__ import annotations

from enum import StrEnum


class SyncMode(StrEnum):
    """How a stream is read: everything each time, or only what changed since the cursor."""

    FULL_REFRESH = "full_refresh"
    INCREMENTAL = "incremental"


class DestinationSyncMode(StrEnum):
    """How read records land: replace the table, add to it, or keep the latest per key.

    Only the modes Headwater implements; Airbyte's ``update`` and ``soft_delete`` (used
    by a few Airbyte destinations) are rejected when a catalog is parsed.  ``history``
    is Headwater's own: the catalogs it hands Airbyte sources never carry it.
    """

    OVERWRITE = "overwrite"
    APPEND = "append"
    #: One row per primary key: the latest by cursor.
    APPEND_DEDUP = "append_dedup"
    #: Every version of a row, each valid from one moment to the next version's
    #: (slowly changing dimension type 2: ``docs/history.md``).
    HISTORY = "history"


__all__ = ["DestinationSyncMode", "SyncMode"]
