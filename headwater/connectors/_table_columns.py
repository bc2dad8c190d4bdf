"""What a database source's table description answers about its columns (postgres, jdbc)."""

from __future__ import annotations

from typing import Any

__all__ = ["TableColumns"]


class TableColumns:
    """Column lookups for a table description whose ``columns`` each have a ``name`` and a
    ``type.cursor_kind`` (set when the column can be an incremental cursor)."""

    columns: tuple[Any, ...]

    def column(self, name: str) -> Any:
        """The column called ``name`` (None: the table has none)."""
        return next((c for c in self.columns if c.name == name), None)

    @property
    def cursor_candidates(self) -> list[str]:
        """Columns that could be an incremental cursor (integer or date-time columns)."""
        return [c.name for c in self.columns if c.type.cursor_kind is not None]
