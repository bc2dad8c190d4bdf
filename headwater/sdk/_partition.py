"""The partition: the unit of parallelism and of checkpointing."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Partition:
    """A small description of one piece of a stream (Airbyte calls it a slice).

    Partitions are planned on the driver, persisted with the run as JSON, and
    pickled to Spark executors, so they must stay small and hold only JSON
    values: a date window, a key range, an object key and the record to start
    at, a parent record's id.  Never put a connection, a client or rows in one.

    ``id`` is stable for the same piece of data, unique within the stream's
    plan, and is written to every row the partition produced
    (``_hw_partition_id``).  ``params`` is read by the stream's ``read``; for
    incremental streams it carries the cursor window under the cursor's
    boundary fields (``start`` / ``end`` by default, half-open ``[start, end)``).

    Example::

        Partition("orders", "2024-01-01/2024-01-02",
                  {"start": "2024-01-01T00:00:00Z", "end": "2024-01-02T00:00:00Z"})
    """

    stream: str
    id: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"stream": self.stream, "id": self.id, "params": dict(self.params)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Partition:
        return cls(stream=data["stream"], id=data["id"], params=dict(data.get("params") or {}))
