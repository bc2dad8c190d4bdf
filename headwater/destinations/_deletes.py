"""Which rows of a stream are deletes: the one convention every destination reads.

A CDC source says a key was deleted with a *tombstone*: a row carrying the key,
a true flag in one of :data:`DELETED_COLUMNS`, and nulls elsewhere (the
PostgreSQL source's ``_pg_deleted``; ``_hw_deleted`` for sources to come).  An
``append_dedup`` table keeps it, flagged, or deletes the key's row
(``deletes: soft | hard``); a ``history`` table closes the key's current version
and opens none; a Kafka topic gets a null value.  Defined once here so those
readings cannot drift apart.
"""

from __future__ import annotations

from collections.abc import Sequence

#: A row whose flag column of these names is true is a delete.
DELETED_COLUMNS = ("_hw_deleted", "_pg_deleted")


def deleted_column(columns: Sequence[str]) -> str | None:
    """The stream's delete flag column, if it has one."""
    return next((name for name in DELETED_COLUMNS if name in columns), None)


__all__ = ["DELETED_COLUMNS", "deleted_column"]
