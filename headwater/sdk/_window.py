"""What a stream tells ``headwater verify`` about one partition's window.

Verify compares, per window, what the source holds now with what the table
holds.  The stream answers both halves of the question:

* :class:`WindowCount` (``Stream.count_window``): how many records the window
  holds at the source now, and the checksum of their primary keys
  (:mod:`headwater.key_checksum`) where the source can compute it;
* :class:`RowWindow` (``Stream.table_window``): which rows of the stream's
  table belong to the same window, as a condition on one column, so that the
  table side is counted by Spark with no knowledge of the source.

A source that cannot count a window raises :class:`CannotCountWindow`, and
verify says so for that stream instead of comparing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from headwater.errors import ConnectorError

__all__ = ["CannotCountWindow", "RowWindow", "WindowCount"]


class CannotCountWindow(ConnectorError):
    """The source cannot count (or the table cannot select) this stream's windows."""


@dataclass(frozen=True)
class WindowCount:
    """Records of one window and, where computed, the checksum of their primary keys."""

    count: int
    #: :func:`headwater.key_checksum.key_checksum` of the window's keys; None when the
    #: source cannot compute it (no primary key, a key type without canonical text).
    key_checksum: int | None = None


@dataclass(frozen=True)
class RowWindow:
    """The rows of a stream's table one window covers: a condition on ``column``.

    ``low <= column < high`` (either bound None: open), or ``column IS NULL``
    (``null``), or ``column IN values`` (``values``); ``column`` None: every row.
    Bounds are Python values of the column's type (``datetime`` for a time stamp
    cursor, ``int`` for a key range).  Equal windows are compared once.
    """

    column: str | None
    low: Any = None
    high: Any = None
    null: bool = False
    values: tuple[Any, ...] | None = None

    def label(self) -> str:
        """The window as the CLI prints it: ``[low, high)``, ``IS NULL``, ``IN (...)``."""
        if self.column is None:
            return "the whole table"
        if self.null:
            return f"{self.column} IS NULL"
        if self.values is not None:
            shown = ", ".join(str(v) for v in self.values[:3])
            more = f", ... ({len(self.values)} values)" if len(self.values) > 3 else ""
            return f"{self.column} IN ({shown}{more})"
        low = "-inf" if self.low is None else _text(self.low)
        high = "+inf" if self.high is None else _text(self.high)
        return f"{self.column} in [{low}, {high})"


def _text(value: Any) -> str:
    isoformat = getattr(value, "isoformat", None)
    return str(isoformat()) if callable(isoformat) else str(value)
