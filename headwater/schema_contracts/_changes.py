"""The schema changes a stream meets, decided on the driver from its schema and its table.

Three kinds, as dlt names them (``tables`` / ``columns`` / ``data_type``):

* a **new table**: the stream's table does not exist yet while the connection has
  synced before (a first sync creates every table: nothing is settled yet, as in dlt);
* a **new column**: a field of the stream's schema that the table lacks (a field
  only records carry, outside the schema, is met by the tasks: :mod:`._rows`);
* a **type change**: a column both have whose table type cannot hold every value of
  the stream's type (``int`` into ``long`` is no change; ``long`` into ``int``,
  ``string`` into ``long`` are), as the destinations' own rule says
  (:func:`headwater.destinations._existing_table.misfits`).

Headwater's columns are declared per stream, so a type change is a column's fact,
decided here once for the run, where dlt decides per value.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import pyarrow as pa

from headwater.config._schema_contract import SchemaContract
from headwater.errors import SchemaContractError
from headwater.table_schema import META_NAMES

#: The column ``new_columns: rescue`` keeps unknown fields in, as a JSON object's text.
RESCUED = "_hw_rescued"

ChangeKind = Literal["new_table", "new_column", "type_change"]

#: What each kind of change is called in messages and in ``headwater plan``.
KIND_LABELS = {"new_table": "new table", "new_column": "new column",
               "type_change": "type change"}


#: What each action does to each kind of change, as ``headwater plan`` says it.
ACTION_EFFECTS: dict[str, dict[str, str]] = {
    "new_table": {"evolve": "the table is created",
                  "freeze": "the sync fails before it commits anything",
                  "discard_row": "the stream is not read (its state stays)",
                  "discard_value": "the stream is not read (its state stays)"},
    "new_column": {"evolve": "the column is added",
                   "freeze": "the sync fails before it commits anything",
                   "discard_row": "rows holding a value in it are kept out (counted)",
                   "discard_value": "its values are nulled (noted in _hw_notes)",
                   "rescue": f"its values are kept as JSON in {RESCUED}"},
    "type_change": {"evolve": "the table keeps its type; values that do not fit are nulled "
                              "and noted",
                    "freeze": "the sync fails before it commits anything",
                    "discard_row": "rows holding a value in it are kept out (counted)",
                    "discard_value": "its values are nulled (noted in _hw_notes)"},
}


@dataclass(frozen=True)
class SchemaChange:
    """One change a stream meets, and what its contract does with it."""

    kind: ChangeKind
    stream: str
    #: The contract's action for this kind of change.
    action: str
    #: The column (a dotted path inside structs); None for a new table.
    column: str | None = None
    #: Both types as a person reads them (``long``); None where there is no such column.
    stream_type: str | None = None
    table_type: str | None = None

    @property
    def top_column(self) -> str | None:
        """The table's top-level column the change is in (``address`` of ``address.zip``)."""
        return None if self.column is None else self.column.split(".", 1)[0]

    def describe(self) -> str:
        if self.kind == "new_table":
            return f"stream {self.stream}: new table"
        if self.kind == "new_column":
            return (f"stream {self.stream}: new column {self.column} ({self.stream_type}), "
                    "not in the table")
        return (f"stream {self.stream}: column {self.column} changed type: the stream's "
                f"{self.stream_type}, the table's {self.table_type}")

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "column": self.column, "stream_type": self.stream_type,
                "table_type": self.table_type, "action": self.action}


def data_columns(table: pa.Schema) -> pa.Schema:
    """A table's columns less Headwater's own (metadata, ``_hw_rescued``)."""
    own = {*META_NAMES, RESCUED}
    return pa.schema([f for f in table if f.name not in own])


def find_changes(stream: str, stream_schema: pa.Schema, table: pa.Schema | None, *,
                 connection_synced: bool, contract: SchemaContract) -> list[SchemaChange]:
    """The changes ``stream`` meets: its data columns ``stream_schema`` against its
    ``table``'s columns (None: no table), in the stream's column order."""
    from headwater.destinations._existing_table import label, misfits

    if table is None:
        if not connection_synced:
            return []
        return [SchemaChange("new_table", stream, contract.new_tables)]
    have = data_columns(table)
    found = [SchemaChange("new_column", stream, contract.new_columns, field.name,
                          label(field.type), None)
             for field in stream_schema if field.name not in have.names]
    shared = [f for f in stream_schema if f.name in have.names]
    table_side = pa.schema([have.field(f.name).with_nullable(True) for f in shared])
    for misfit in misfits(table_side, pa.schema(shared), adds_nested_fields=True):
        found.append(SchemaChange("type_change", stream, contract.type_changes, misfit.column,
                                  misfit.stream_type, misfit.table_type))
    return found


def refuse_frozen(changes: list[SchemaChange]) -> None:
    """Raise :class:`SchemaContractError` naming every change a contract freezes."""
    frozen = [c for c in changes if c.action == "freeze"]
    if not frozen:
        return
    first = frozen[0]
    kinds = sorted({KIND_LABELS[c.kind].replace(" ", "_") + "s" for c in frozen})
    raise SchemaContractError(
        f"schema contract broken: {'; '.join(c.describe() for c in frozen)}; the contract "
        f"freezes {', '.join(kinds)}. Nothing was committed and no state moved. Change the "
        "source or the table back, or let the change in (schema_contract evolve, "
        "discard_row, discard_value or rescue)",
        stream=first.stream, column=first.column, stream_type=first.stream_type,
        table_type=first.table_type)


def written_schema(stream_schema: pa.Schema, changes: list[SchemaChange],
                   contract: SchemaContract, table: pa.Schema | None = None) -> pa.Schema:
    """The data columns the stream's rows are typed into and the destination prepares:
    the stream's, less the new columns the contract keeps out of the table, a column
    whose changed type the contract discards in the ``table``'s type (no value of the
    new type reaches it, so the table need not change), plus ``_hw_rescued`` when new
    columns are rescued."""
    kept_out = {c.column for c in changes if c.kind == "new_column" and c.action != "evolve"}
    discarded = {c.top_column for c in changes if c.kind == "type_change"
                 and c.action in ("discard_row", "discard_value")}
    fields = [table.field(f.name) if table is not None and f.name in discarded else f
              for f in stream_schema if f.name not in kept_out]
    if contract.new_columns == "rescue":
        fields.append(pa.field(RESCUED, pa.string()))
    return pa.schema(fields)


def discards_table(changes: list[SchemaChange]) -> SchemaChange | None:
    """The new-table change whose contract keeps the stream out of this sync, if any."""
    return next((c for c in changes
                 if c.kind == "new_table" and c.action in ("discard_row", "discard_value")),
                None)


__all__ = ["ACTION_EFFECTS", "KIND_LABELS", "RESCUED", "ChangeKind", "SchemaChange", "data_columns",
           "discards_table", "find_changes", "refuse_frozen", "written_schema"]
