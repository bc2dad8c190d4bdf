"""The postgres source's key text for the boundary keys (:mod:`.._boundary_cursor`)."""

from __future__ import annotations

from collections.abc import Sequence

from psycopg import sql

from headwater.connectors._boundary_cursor import (
    BOUNDARY_KEY,
    SEEN_AT,
    SEEN_KEYS,
    TOP_AT,
    TOP_KEYS,
    BoundaryCursor,
)

__all__ = ["BOUNDARY_KEY", "SEEN_AT", "SEEN_KEYS", "TOP_AT", "TOP_KEYS", "BoundaryCursor",
           "key_expression"]


def key_expression(primary_key: Sequence[str]) -> sql.Composable:
    """A row's key as text: ``jsonb_build_array(k1, k2, ...)::text``.

    The plan lists keys and the read compares them through this one
    expression, under the same session settings (UTC, ISO dates), so equal
    keys give equal text for every column type.
    """
    return sql.SQL("jsonb_build_array({})::text").format(
        sql.SQL(", ").join(sql.Identifier(c) for c in primary_key))
