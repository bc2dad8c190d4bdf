"""The ``schema_contract`` setting: what a sync does when a stream's schema changed.

Modelled on dlt's schema contracts (``tables`` / ``columns`` / ``data_type``, each
``evolve`` / ``freeze`` / ``discard_row`` / ``discard_value``), named after the change a
person meets rather than dlt's entity: ``new_tables``, ``new_columns``,
``type_changes``; ``new_columns`` also takes ``rescue`` (Databricks Auto Loader's
rescued-data column).  One string applies to all three (``schema_contract: freeze``).
A stream's setting replaces the connection's as a whole (no merge per kind): what a
stream says is read in one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, model_validator

#: What a contract does with one kind of change.
Action = Literal["evolve", "freeze", "discard_row", "discard_value"]
#: ``new_columns`` also rescues: unknown fields as JSON in ``_hw_rescued``.
ColumnAction = Literal["evolve", "freeze", "discard_row", "discard_value", "rescue"]

ACTIONS: tuple[str, ...] = get_args(Action)


class SchemaContract(BaseModel):
    """What a sync does with each kind of schema change (``docs/schema-contracts.md``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    new_tables: Action = "evolve"
    new_columns: ColumnAction = "evolve"
    type_changes: Action = "evolve"

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        """``schema_contract: freeze`` is that action for every kind of change."""
        if isinstance(value, str):
            if value not in ACTIONS:
                raise ValueError(
                    f"expected one of {', '.join(ACTIONS)}, or a mapping of new_tables, "
                    "new_columns, type_changes to one of them (new_columns also takes "
                    f"rescue); got {value!r}")
            return {"new_tables": value, "new_columns": value, "type_changes": value}
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise ValueError("expected one of evolve, freeze, discard_row, discard_value, or "
                             "a mapping of new_tables, new_columns, type_changes")
        return value

    @property
    def evolves(self) -> bool:
        """Whether every kind of change evolves: today's behaviour, nothing to check."""
        return self.new_tables == self.new_columns == self.type_changes == "evolve"


#: The contract of a stream and connection that say nothing.
EVOLVE = SchemaContract()

__all__ = ["ACTIONS", "EVOLVE", "Action", "ColumnAction", "SchemaContract"]
