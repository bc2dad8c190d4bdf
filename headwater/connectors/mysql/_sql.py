"""SQL text the mysql source builds: identifiers quoted, values as literals it formats itself.

connectorx (the reader) takes no bind parameters, so a partition's bounds are
written into its query.  They are never a user's text spliced in: integers are
written by ``int()``, date-times by ``strftime`` from a parsed value, and any
text (a primary key's, for the boundary keys) as a hexadecimal literal, which
no SQL mode or character set reads otherwise.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from typing import Any

from headwater.connectors._boundary import SEEN_AT, SEEN_KEYS, TOP_AT, TOP_KEYS
from headwater.connectors.mysql._catalog import TableInfo
from headwater.connectors.mysql._text_keys import collated_literal
from headwater.connectors.mysql._types import quote_ident

__all__ = ["key_expression", "literal", "relation", "text_literal", "window_conditions"]


def relation(table: TableInfo) -> str:
    return f"{quote_ident(table.database)}.{quote_ident(table.name)}"


def text_literal(text: str) -> str:
    """``text`` as a utf8mb4 literal compared byte for byte (``utf8mb4_bin``)."""
    return f"_utf8mb4 X'{text.encode().hex()}' COLLATE utf8mb4_bin"


def literal(value: Any) -> str:
    """An integer, a date-time (UTC when aware: the session's time zone) or text."""
    if isinstance(value, bool):
        raise TypeError("a boolean is not a key or cursor value")
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return "'" + value.strftime("%Y-%m-%d %H:%M:%S.%f") + "'"
    if isinstance(value, str):
        return text_literal(value)
    raise TypeError(f"no literal for {type(value).__name__}")


def _bound(value: Any) -> str:
    """A range's bound: text under the column's collation, else :func:`literal`."""
    return collated_literal(value) if isinstance(value, str) else literal(value)


def key_expression(primary_key: Sequence[str]) -> str:
    """A row's key as text, ``CAST(JSON_ARRAY(k1, k2, ...) AS CHAR)``: the plan lists
    keys and the read compares them through this one expression, on the same server
    under the same session settings, so equal keys give equal text."""
    return "CAST(JSON_ARRAY({}) AS CHAR)".format(", ".join(quote_ident(c) for c in primary_key))


def window_conditions(bounds: Mapping[str, Any]) -> list[str]:
    """The conditions of a partition's bounds: ``column`` within ``[lo, hi)`` (either
    ``None``: open), ``null`` for the rows where it is NULL, and a cursor window's
    boundary keys (:mod:`headwater.connectors._boundary`) with the table's ``key``
    columns.  ``lo``, ``hi``, ``top_at`` and ``seen_at`` are parsed values (int or
    datetime), or text for ``lo`` and ``hi`` of a text key's range, compared under the
    column's collation (:mod:`._text_keys`)."""
    column = bounds.get("column")
    if not column:
        return []
    ident = quote_ident(column)
    if bounds.get("null"):
        return [f"{ident} IS NULL"]
    conditions = []
    if bounds.get("lo") is not None:
        conditions.append(f"{ident} >= {_bound(bounds['lo'])}")
    if bounds.get("hi") is not None:
        conditions.append(f"{ident} < {_bound(bounds['hi'])}")
    for at, keys, test in ((TOP_AT, TOP_KEYS, "IN"), (SEEN_AT, SEEN_KEYS, "NOT IN")):
        if bounds.get(keys) is None or at not in bounds:
            continue
        listed = ", ".join(text_literal(k) for k in bounds[keys]) or "NULL"
        if not bounds[keys] and test == "NOT IN":
            continue  # no key was read there: every row at the value is new
        conditions.append(f"({ident} <> {literal(bounds[at])} OR "
                          f"{key_expression(bounds['key'])} {test} ({listed}))")
    return conditions
