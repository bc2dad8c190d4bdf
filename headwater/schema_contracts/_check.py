"""A stream's contract checked on the driver, before its table is prepared.

One look at the stream's table (``Destination.table_columns``), then everything
the run needs: the changes (for ``headwater plan`` and the freeze), the columns
the destination prepares, and what the tasks do to rows.  Nothing is looked at
when the contract evolves everything: today's behaviour costs nothing more.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pyarrow as pa

from headwater.config._schema_contract import SchemaContract
from headwater.schema_contracts._changes import (
    SchemaChange,
    discards_table,
    find_changes,
    written_schema,
)
from headwater.schema_contracts._rows import RowContract

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from headwater.destinations import Destination


@dataclass(frozen=True)
class ContractCheck:
    """What a stream's contract makes of its schema and its table, for one run."""

    #: The data columns the destination prepares and the rows are typed into.
    written: pa.Schema
    changes: list[SchemaChange] = field(default_factory=list)
    #: What the tasks do to rows; None: nothing (today's typing).
    rows: RowContract | None = None

    @property
    def skipped(self) -> SchemaChange | None:
        """The new table the contract keeps out of the run (its stream is not read)."""
        return discards_table(self.changes)


def check_stream(destination: Destination, stream: str, stream_schema: pa.Schema,
                 contract: SchemaContract, *, connection_synced: bool,
                 spark: SparkSession | None = None) -> ContractCheck:
    """``stream``'s contract against its table as it is now (see the module docstring)."""
    if contract.evolves:
        return ContractCheck(stream_schema)
    table = destination.table_columns(stream, spark)
    changes = find_changes(stream, stream_schema, table, connection_synced=connection_synced,
                           contract=contract)
    written = written_schema(stream_schema, changes, contract, table)
    return ContractCheck(written, changes, RowContract.of(stream, contract, written, changes))


__all__ = ["ContractCheck", "check_stream"]
