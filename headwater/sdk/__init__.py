"""The connector SDK: what a source author imports.

A source declares its streams; a stream declares its schema, keys and cursor,
splits itself into partitions and reads one partition.  The engine does the rest.
"""

from headwater.sdk._connector_state import ConnectorStateCursor, PartitionState
from headwater.sdk._cursor import ConcurrentCursor, Cursor, FinalStateCursor
from headwater.sdk._partition import Partition
from headwater.sdk._plan_context import FieldReader, PlanContext, read_fields_locally
from headwater.sdk._state_converters import (
    EpochSecondsStateConverter,
    IntegerStateConverter,
    IsoDateTimeStateConverter,
    StateConverter,
)
from headwater.sdk._stream import FULL_REFRESH, INCREMENTAL, RecordOrBatch, Source, Stream
from headwater.sdk._window import CannotCountWindow, RowWindow, WindowCount

__all__ = [
    "FULL_REFRESH",
    "INCREMENTAL",
    "CannotCountWindow",
    "ConcurrentCursor",
    "ConnectorStateCursor",
    "Cursor",
    "EpochSecondsStateConverter",
    "FieldReader",
    "FinalStateCursor",
    "IntegerStateConverter",
    "IsoDateTimeStateConverter",
    "Partition",
    "PartitionState",
    "PlanContext",
    "RecordOrBatch",
    "RowWindow",
    "Source",
    "StateConverter",
    "Stream",
    "WindowCount",
    "read_fields_locally",
]
