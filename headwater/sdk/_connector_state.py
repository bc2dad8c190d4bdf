"""State a source keeps itself: Airbyte connectors checkpoint their own position.

Native Headwater streams never produce state; the engine derives it from the
partitions it committed (see :mod:`headwater.sdk._cursor`).  A stream that wraps
a process with its own notion of position (an Airbyte connector's ``STATE``
messages) yields a :class:`PartitionState` as the last item of a partition's
``read``.  The engine carries it back to the driver *inside the checkpoint's
commit* (the same Spark job that writes the rows), and hands it to the cursor
only after that commit succeeded, so the state never gets ahead of the data.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from headwater.sdk._cursor import Cursor
from headwater.sdk._partition import Partition

__all__ = ["ConnectorStateCursor", "PartitionState"]


@dataclass(frozen=True)
class PartitionState:
    """The source's own state after every record of the partition read so far.

    Yield it from :meth:`~headwater.sdk.Stream.read` after the records it
    covers; the last one yielded wins.  ``state`` must be JSON-serializable.
    A read that raises after yielding one releases nothing: the partition's
    records and its state are committed together or not at all.
    """

    state: Mapping[str, Any]


class ConnectorStateCursor(Cursor):
    """Keeps the latest state the source itself reported for committed partitions.

    Used by streams that read one partition per stream (a connector's whole
    stream is one Spark task): its state is the connector's last ``STATE``
    message of that task.  Until a committed partition reports one, the state
    is the one the sync started from, so a failed read leaves state untouched.
    """

    def __init__(self, state: Mapping[str, Any] | None) -> None:
        # Commit threads observe while the driver reads state(); the lock keeps
        # the swap atomic.
        self._lock = threading.Lock()
        self._state = copy.deepcopy(dict(state)) if state else None

    def observe_state(self, partition: Partition, state: Mapping[str, Any]) -> None:
        with self._lock:
            self._state = copy.deepcopy(dict(state))

    def close_partition(self, partition: Partition) -> None:
        """Nothing to merge: the source's own state already says where it stopped."""

    def state(self) -> dict[str, Any] | None:
        with self._lock:
            return copy.deepcopy(self._state)
