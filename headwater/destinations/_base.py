"""The writer interface every destination implements.

Same shape as Spark's two-phase writes: executors produce the rows of one
checkpoint batch, the destination commits them in one transaction, and says
whether the commit happened now, had already happened in an earlier attempt,
or failed.  Each destination states its guarantee.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

import pyarrow as pa

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from headwater.engine._plan import CheckpointPlan, StreamPlan


@dataclass(frozen=True)
class CommitMarker:
    """Identifies one checkpoint's commit, durably, inside the destination.

    ``app_id``/``version`` are what an idempotent destination keys on (Delta's
    ``txnAppId``/``txnVersion``); ``tag`` is written with the commit so a resumed
    attempt can find out whether a killed attempt's commit landed.
    """

    app_id: str
    version: int
    run_id: str
    stream: str
    checkpoint_index: int
    #: Partition id -> the source's own state (``Stream.keeps_own_state``), carried
    #: in the tag so that the commit and the states it released are one atomic fact.
    partition_states: Mapping[str, Any] | None = None

    @property
    def tag(self) -> str:
        document: dict[str, Any] = {"headwater": {
            "run_id": self.run_id, "stream": self.stream, "checkpoint": self.checkpoint_index}}
        if self.partition_states is not None:
            document["partition_states"] = dict(self.partition_states)
        return json.dumps(document, sort_keys=True, separators=(",", ":"))


def tagged_partition_states(tag: str | None) -> dict[str, Any]:
    """The partition states a commit's tag carries (``{}`` when it carries none)."""
    try:
        document = json.loads(tag or "{}")
    except ValueError:
        return {}
    states = document.get("partition_states") if isinstance(document, dict) else None
    return dict(states) if isinstance(states, dict) else {}


@dataclass(frozen=True)
class CommitResult:
    """What one checkpoint commit did."""

    rows: int
    rejected: int
    bytes: int
    version: int | None
    #: True when the commit had already landed in an earlier attempt.
    already_committed: bool = False
    #: Partition id -> the source's own state, for streams that keep one
    #: (``Stream.keeps_own_state``); filled by the engine from the commit's Spark job.
    partition_states: Mapping[str, Any] = field(default_factory=dict)


class Destination(ABC):
    """Writes streams into tables; one implementation per kind of destination."""

    type_name: ClassVar[str] = ""
    #: "exactly-once" or "at-least-once (deduplicated by primary key)".
    guarantee: ClassVar[str] = ""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = dict(config)

    @classmethod
    @abstractmethod
    def spec(cls) -> dict[str, Any]:
        """JSON Schema of the destination's config."""

    @abstractmethod
    def table_location(self, stream: str) -> str:
        """Where the stream's table lives (a path or a table name)."""

    @abstractmethod
    def prepare(self, spark: SparkSession, plan: StreamPlan, data_schema: pa.Schema) -> pa.Schema:
        """Create or evolve the stream's table; return the data schema to write with.

        New columns are added; a column whose type changed keeps the table's
        type, and values that do not fit it are recorded per row by the engine.
        """

    @abstractmethod
    def find_commit(self, spark: SparkSession, plan: StreamPlan,
                    marker: CommitMarker) -> CommitResult | None:
        """The earlier commit of ``marker``, if one landed (used when resuming)."""

    @abstractmethod
    def commit(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
               rows: DataFrame, marker: CommitMarker) -> CommitResult:
        """Commit one checkpoint batch in one idempotent transaction."""

    def replace_run(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
                    rows: DataFrame, marker: CommitMarker, *,
                    replaced_run_id: str) -> CommitResult:
        """Replace every row run ``replaced_run_id`` wrote with ``rows``, in one transaction.

        What ``headwater replay`` commits for append and overwrite tables;
        destinations that cannot delete and insert atomically do not support it.
        """
        from headwater.errors import DestinationError

        raise DestinationError(f"the {self.type_name or type(self).__name__} destination "
                               "cannot replay a run (it cannot replace a run's rows atomically)",
                               stream=plan.stream.name)
