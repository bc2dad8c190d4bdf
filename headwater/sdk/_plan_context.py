"""What the engine tells a stream while it plans: how the run will execute.

Most streams ignore it (:meth:`Stream.plan` defaults to
:meth:`Stream.partitions`).  Two kinds of streams need it:

* a stream that shares something across the tasks running at once, like an
  API call budget, needs ``parallel_tasks`` (how many Spark tasks the cluster
  runs at the same time) to split it evenly;
* a substream takes its partitions from its parent's records, and reads them
  with ``read_fields``: the parent's partitions are read on the executors and
  only the named fields of each record come back to the driver;
* a parent whose substream is synced in the same run reads its pages once for
  both: it needs to know which streams the run syncs (``synced_states``), a
  folder every task can share (``shared_dir``) and one end for every stream's
  open windows (``planned_at``), so the two streams cut the same windows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from headwater.sdk._connector_state import PartitionState
from headwater.sdk._partition import Partition
from headwater.sync_modes import DestinationSyncMode

if TYPE_CHECKING:
    from headwater.sdk._stream import Stream

__all__ = ["FieldReader", "PlanContext", "read_fields_locally"]

#: ``(stream, partitions, fields) -> one dict of those fields per record``.
FieldReader = Callable[["Stream", Sequence[Partition], Sequence[str]], list[dict[str, Any]]]


def read_fields_locally(stream: Stream, partitions: Sequence[Partition],
                        fields: Sequence[str]) -> list[dict[str, Any]]:
    """Read ``partitions`` in this process and keep ``fields`` of each record.

    The fallback when no engine is planning (tests, a notebook); the engine
    reads on Spark instead.
    """
    return [row for partition in partitions for row in _field_rows(stream, partition, fields)]


def _field_rows(stream: Stream, partition: Partition,
                fields: Sequence[str]) -> Iterator[dict[str, Any]]:
    for item in stream.read(partition):
        if isinstance(item, PartitionState):
            continue  # a source's own position, not a record
        if isinstance(item, Mapping):
            yield {name: item.get(name) for name in fields}
        else:  # an Arrow record batch
            columns = {name: (item.column(name).to_pylist() if name in item.schema.names
                              else [None] * item.num_rows) for name in fields}
            for position in range(item.num_rows):
                yield {name: columns[name][position] for name in fields}


@dataclass(frozen=True)
class PlanContext:
    """How the planned run executes; see the module docstring.

    ``parallel_tasks`` is the number of tasks that run at once across the
    cluster (Spark's default parallelism: every executor core).
    ``destination_sync_mode`` is how the stream's rows land (``append``,
    ``append_dedup``, ``overwrite``; ``None`` when unknown): a source whose
    incremental reads may return a row again relies on ``append_dedup`` to
    collapse it, and must plan differently under plain ``append``.

    ``planned_at`` is the moment the run was planned (aware, UTC): a stream
    whose windows run "up to now" ends them here, so every stream of the run
    ends at the same instant.  ``synced_states`` names the streams this run
    syncs, each with the state it is planned from (``None``: read whole).
    ``shared_dir`` is a folder on the machine every task of the run executes
    on (``None`` where tasks may run elsewhere: a cluster, Spark Connect); what
    one task leaves there for another lives as long as the run.
    ``reads_early``: the source was asked to start this run's reads before
    Spark, into ``shared_dir`` (``Source.prepare``), and plans its partitions so
    that the tasks find them there.
    ``incremental``: the stream is synced incrementally (``False``: a full refresh;
    ``None``: unknown).  ``state`` is ``None`` both for a full refresh and for an
    incremental stream's first sync; a source whose first incremental read starts
    elsewhere than a full refresh (Kafka's ``start: latest``) tells them apart here.
    """

    parallel_tasks: int = 1
    read_fields: FieldReader = read_fields_locally
    destination_sync_mode: DestinationSyncMode | None = None
    planned_at: datetime | None = None
    synced_states: Mapping[str, Mapping[str, Any] | None] = field(default_factory=dict)
    shared_dir: str | None = None
    reads_early: bool = False
    incremental: bool | None = None
