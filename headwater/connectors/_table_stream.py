"""A database table as a stream: key ranges for a full refresh, cursor windows under the
tie rule for incremental reads (the ``postgres``, ``mysql`` and ``jdbc`` sources).

What the two share is everything but the SQL: the cursor's converter and its
start, the boundary cursor that keeps the keys read at the top value
(:mod:`headwater.connectors._boundary`), whether the plan may read the top
value (not under a plain ``append`` without keys), the partition ids and the
first sync's partition of rows whose cursor is NULL.  Each source plans its
windows in :meth:`TableStream._plan`, asking its database.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Mapping
from typing import Any

from headwater.connectors._boundary import BoundaryCursor
from headwater.sdk import (
    Cursor,
    IntegerStateConverter,
    IsoDateTimeStateConverter,
    Partition,
    PlanContext,
    StateConverter,
    Stream,
)
from headwater.sync_modes import DestinationSyncMode

__all__ = ["TableStream", "converter_for", "table_json_schema"]

#: Where incremental history begins (rows with an earlier cursor are read by the first
#: window, which is open below).
DATETIME_START = "1000-01-01T00:00:00Z"
INTEGER_START = -(2**63)


def table_json_schema(properties: Mapping[str, Any], cursor_candidates: list[str],
                      unmapped: list[str]) -> dict[str, Any]:
    """A table's stream schema: its columns, and for ``discover`` the columns that could
    serve as the cursor (integer or date-time) and those carried as text."""
    schema: dict[str, Any] = {"$schema": "http://json-schema.org/draft-07/schema#",
                              "type": "object", "properties": dict(properties),
                              "x-cursor-candidates": cursor_candidates}
    if unmapped:
        schema["description"] = "carried as text, no type mapping: " + ", ".join(unmapped)
    return schema


def converter_for(cursor_kind: str | None) -> StateConverter | None:
    """The state converter of a cursor column of ``cursor_kind`` (None: not a cursor)."""
    if cursor_kind is None:
        return None
    return IntegerStateConverter() if cursor_kind == "integer" else IsoDateTimeStateConverter()


class TableStream(Stream):
    """The tie rule's part of a table stream; subclasses set ``_name`` and ``table`` (their
    catalog's description: ``columns``, ``cursor_candidates``, ``unmapped``) and plan in
    ``_plan``."""

    _name: str
    table: Any

    @property
    def stream_name(self) -> str:
        return self._name

    def json_schema(self) -> dict[str, Any]:
        properties = {c.name: dict(c.type.schema) for c in self.table.columns}
        properties.update(self.change_columns())
        return table_json_schema(properties, self.table.cursor_candidates, self.table.unmapped)

    def change_columns(self) -> Mapping[str, dict[str, Any]]:
        """The columns change data capture adds after the table's (none unless it reads so)."""
        return {}

    def cursor_start(self) -> Any:
        if isinstance(self.state_converter, IntegerStateConverter):
            return INTEGER_START
        return DATETIME_START

    def cursor(self, state: Mapping[str, Any] | None, incremental: bool) -> Cursor:
        if incremental and self.state_converter is not None and self.cursor_field:
            return BoundaryCursor(cursor_field=self.cursor_field, converter=self.state_converter,
                                  state=state, start=self.cursor_start())
        return super().cursor(state, incremental)

    def plan(self, state: Mapping[str, Any] | None, context: PlanContext) -> list[Partition]:
        """Partitions, knowing whether rows land by plain ``append`` (see :mod:`._boundary`)."""
        appends = context.destination_sync_mode == DestinationSyncMode.APPEND
        return self._plan(state, exact_append=appends)

    def partitions(self, state: Mapping[str, Any] | None) -> list[Partition]:
        return self._plan(state, exact_append=False)

    @abstractmethod
    def _plan(self, state: Mapping[str, Any] | None, *, exact_append: bool) -> list[Partition]:
        """The partitions; ``exact_append``: rows land by plain ``append`` (no MERGE)."""

    def null_cursor_partition(self) -> Partition:
        """Rows whose cursor is NULL: read by the first sync (and every full refresh) only,
        in an empty window so the cursor's ranges do not move."""
        start = self.cursor_start()
        return Partition(self._name, f"{self._name}:cursor-null",
                         {"start": start, "end": start, "cursor_null": True})

    def _partition(self, params: dict[str, Any]) -> Partition:
        """A partition whose id names its window or key range (stable across plans)."""
        if "start" in params:
            ident = f"{self._name}:{params['start']}/{params['end']}"
        elif params.get("column"):
            ident = f"{self._name}:{params['column']}:{params['lo']}/{params['hi']}"
        else:
            ident = f"{self._name}:all"
        return Partition(self._name, ident, params)
