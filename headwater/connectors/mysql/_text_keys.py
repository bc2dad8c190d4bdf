"""Text keys split into ranges: the server's order and the server's comparison, never Python's.

A VARCHAR (or CHAR, TEXT) key is ordered by its column's collation:
``utf8mb4_unicode_ci`` puts ``apple`` before ``Banana`` and ``éclair`` beside
``eclipse``, ``latin1_swedish_ci`` puts ``ä`` after ``z``, ``utf8mb4_bin`` orders
bytes.  Python's string order is none of them.  So a key range is cut and read
by the server alone:

* the cuts are the keys at every ``n / partitions``-th row of
  ``ROW_NUMBER() OVER (ORDER BY key)`` (:func:`._partitioning.quantile_cuts`), kept in
  the order the server numbered them (:func:`server_ordered`), never sorted here;
* a range's bounds are written as :func:`collated_literal`: a ``_utf8mb4`` literal
  with no ``COLLATE``.  A literal is *coercible* (coercibility 4) and the column
  *implicit* (2), so the comparison ``key >= literal`` runs under the column's own
  collation (its character set too: the literal is converted to it, and a cut,
  read from the column, always converts back).  The boundary keys' literal
  (:func:`._sql.text_literal`, ``COLLATE utf8mb4_bin``) would compare bytes instead:
  right for comparing a key's JSON text with itself, wrong for a range of keys.

Cut and compared under one order, the half-open ranges ``[lo, hi)`` hold every row
once, whatever the collation (case- or accent-insensitive, PAD SPACE or not).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["collated_literal", "server_ordered"]


def collated_literal(text: str) -> str:
    """``text`` as a literal compared under the other operand's (the column's) collation."""
    return f"_utf8mb4 X'{text.encode().hex()}'"


def server_ordered(values: Iterable[Any]) -> list[Any]:
    """``values`` in the order the server gave them (its collation's), each once."""
    return list(dict.fromkeys(values))
