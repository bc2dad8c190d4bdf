"""The quarantine table, as a stream of its own: the rows a stream's ``quarantine``
expectations kept out of its table, in a table beside it (``<stream>_quarantine``), with
the names of the expectations each failed (``_hw_failed_expectations``) and the run that
read it (``_hw_run_id``, with the other metadata columns).

Why a stream of its own: a destination already knows how to create a table, have its
tasks write (or COPY) the rows, and commit them once per checkpoint keyed by a marker.
The quarantine table is one more table of that kind, in ``append`` mode, so each
destination commits it with its own machinery (:func:`quarantine_plan`) and none has
code for quarantine.  The engine drives it (:mod:`headwater.engine._quarantine`, where
the exactly-once argument is written down).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import pyarrow as pa

from headwater.expectations._arrow import FAILED_COLUMN

if TYPE_CHECKING:
    from headwater.plan import StreamPlan

#: What the quarantine table's name adds to the stream's.
SUFFIX = "_quarantine"
#: The column naming the expectations a quarantined row failed (in the expectations' order).
FAILED_FIELD = pa.field(FAILED_COLUMN, pa.list_(pa.string()))
#: Destinations without a quarantine table.  Kafka: its tasks produce each source
#: partition's rows in a Kafka transaction with that task's marker, under a transactional
#: id stable across attempts (``destinations/kafka``); a quarantine topic would need its
#: rows in those same transactions (or units and markers of its own), and the rows would
#: have no task writer to come from, so Spark's way would persist every checkpoint.
NO_QUARANTINE = ("kafka",)


def quarantine_refusal(destination_type: str) -> str | None:
    """Why ``quarantine`` cannot be an expectation's action on this destination."""
    if destination_type not in NO_QUARANTINE:
        return None
    return (f"the {destination_type} destination has no quarantine table (its tasks produce "
            f"each source partition in a transaction of the stream's topic): use action "
            f"drop, warn or fail")


def quarantine_stream(stream: str) -> str:
    """The quarantine table's stream name: ``<stream>_quarantine``."""
    return stream + SUFFIX


def quarantine_columns(data_schema: pa.Schema) -> pa.Schema:
    """The quarantine table's data columns: the stream's, then :data:`FAILED_FIELD`."""
    return pa.schema([*(f for f in data_schema if f.name != FAILED_COLUMN), FAILED_FIELD])


def quarantine_plan(plan: StreamPlan) -> StreamPlan:
    """The stream's plan as its quarantine table's: the same checkpoints, an ``append``
    table named ``<stream>_quarantine`` without key, cursor or layout of its own."""
    from headwater.plan import TableLayout
    from headwater.sync_modes import DestinationSyncMode

    stream = replace(plan.stream, name=quarantine_stream(plan.stream.name),
                     destination_sync_mode=DestinationSyncMode.APPEND, cursor_field=None,
                     primary_key=(), table_layout=TableLayout(), deletes="soft")
    return replace(plan, stream=stream, state_before=None)


__all__ = ["FAILED_FIELD", "NO_QUARANTINE", "SUFFIX", "quarantine_columns", "quarantine_plan",
           "quarantine_refusal", "quarantine_stream"]
