"""Schema contracts: what a sync does when a stream's schema changed (issue 38, item 1).

A contract says, per kind of change (a new table, a new column, a changed type),
``evolve`` (today's behaviour, the default), ``freeze`` (fail before anything is
committed), ``discard_row``, ``discard_value``, and for new columns ``rescue``
(``_hw_rescued``).  ``docs/schema-contracts.md`` is the user's page.  The package
splits the work by where it runs:

* ``headwater/config/_schema_contract.py``: the ``schema_contract`` setting (pydantic);
* ``_changes.py``: the changes a stream meets, from its schema and its table (driver);
* ``_check.py``: one stream's contract checked before its table is prepared (driver);
* ``_rows.py``: the contract applied to rows as the tasks type them (executors).
"""

from __future__ import annotations

from headwater.config._schema_contract import EVOLVE, SchemaContract
from headwater.schema_contracts._changes import (
    ACTION_EFFECTS,
    KIND_LABELS,
    RESCUED,
    SchemaChange,
    data_columns,
    find_changes,
    refuse_frozen,
    written_schema,
)
from headwater.schema_contracts._check import ContractCheck, check_stream
from headwater.schema_contracts._rows import RowContract, Tally

__all__ = ["ACTION_EFFECTS", "EVOLVE", "KIND_LABELS", "RESCUED", "ContractCheck",
           "RowContract", "SchemaChange", "SchemaContract", "Tally", "check_stream",
           "data_columns", "find_changes", "refuse_frozen", "written_schema"]
