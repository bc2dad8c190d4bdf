"""The plan of a run: which partitions, grouped into which checkpoints, in which order.

A plan is made once, persisted with the run *before* any data is read, and
never recomputed for that run: a resumed attempt re-executes exactly the same
checkpoints, which is what lets the destination recognise (and skip) the ones a
killed attempt already committed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from headwater.sdk import Partition


@dataclass(frozen=True)
class ConfiguredStream:
    """A stream as the connection wants it synced (connection file + source defaults)."""

    name: str
    sync_mode: str  # full_refresh | incremental
    destination_sync_mode: str  # overwrite | append | append_dedup
    cursor_field: str | None
    primary_key: tuple[str, ...]
    #: Columns kept as JSON text (the stream's ``json_columns``) instead of VARIANT or structs.
    json_columns: tuple[str, ...] = ()

    @property
    def incremental(self) -> bool:
        return self.sync_mode == "incremental"

    @property
    def mode_label(self) -> str:
        return f"{self.sync_mode}+{self.destination_sync_mode}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "sync_mode": self.sync_mode,
            "destination_sync_mode": self.destination_sync_mode,
            "cursor_field": self.cursor_field,
            "primary_key": list(self.primary_key),
            "json_columns": list(self.json_columns),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ConfiguredStream:
        return cls(
            name=data["name"],
            sync_mode=data["sync_mode"],
            destination_sync_mode=data["destination_sync_mode"],
            cursor_field=data.get("cursor_field"),
            primary_key=tuple(data.get("primary_key") or ()),
            json_columns=tuple(data.get("json_columns") or ()),
        )


@dataclass(frozen=True)
class CheckpointPlan:
    """One batch of partitions committed in one destination transaction.

    ``index`` is global per (connection, stream) and only grows across runs; it
    is the release order and the Delta ``txnVersion``.  ``lane`` is the sequence
    of commits the checkpoint belongs to: commits within a lane happen in index
    order, lanes run side by side (so each lane's ``txnAppId`` sees growing
    versions, which Delta's idempotent writes require).
    """

    index: int
    checkpoint_id: str
    lane: int
    partitions: tuple[Partition, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "checkpoint_id": self.checkpoint_id,
            "lane": self.lane,
            "partitions": [p.to_dict() for p in self.partitions],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CheckpointPlan:
        return cls(
            index=int(data["index"]),
            checkpoint_id=data["checkpoint_id"],
            lane=int(data["lane"]),
            partitions=tuple(Partition.from_dict(p) for p in data["partitions"]),
        )


@dataclass(frozen=True)
class StreamPlan:
    stream: ConfiguredStream
    state_before: dict[str, Any] | None
    lanes: int
    checkpoints: tuple[CheckpointPlan, ...]
    json_schema: dict[str, Any] = field(default_factory=dict)

    @property
    def partition_count(self) -> int:
        return sum(len(c.partitions) for c in self.checkpoints)

    def to_dict(self) -> dict[str, Any]:
        return {
            "stream": self.stream.to_dict(),
            "state_before": self.state_before,
            "lanes": self.lanes,
            "checkpoints": [c.to_dict() for c in self.checkpoints],
            "json_schema": self.json_schema,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StreamPlan:
        return cls(
            stream=ConfiguredStream.from_dict(data["stream"]),
            state_before=data.get("state_before"),
            lanes=int(data["lanes"]),
            checkpoints=tuple(CheckpointPlan.from_dict(c) for c in data["checkpoints"]),
            json_schema=dict(data.get("json_schema") or {}),
        )


#: What a run is for.  A ``sync`` moves state; a ``backfill`` (a cursor window read
#: again) and a ``replay`` (a past run's partitions read again, replacing that run's
#: rows) commit exactly like a sync but never touch state.
RUN_PURPOSES = ("sync", "backfill", "replay")


@dataclass(frozen=True)
class RunPlan:
    connection: str
    streams: tuple[StreamPlan, ...]
    purpose: str = "sync"
    #: The run whose rows a ``replay`` replaces (its rows keep that run's id).
    replay_of: str | None = None

    @property
    def moves_state(self) -> bool:
        return self.purpose == "sync"

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"connection": self.connection,
                                "streams": [s.to_dict() for s in self.streams]}
        if self.purpose != "sync":
            data["purpose"] = self.purpose
        if self.replay_of is not None:
            data["replay_of"] = self.replay_of
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunPlan:
        return cls(
            connection=data["connection"],
            streams=tuple(StreamPlan.from_dict(s) for s in data["streams"]),
            purpose=str(data.get("purpose") or "sync"),
            replay_of=data.get("replay_of"),
        )


def group_checkpoints(
    partitions: Sequence[Partition],
    *,
    first_index: int,
    per_checkpoint: int,
    lanes: int,
    overwrite: bool,
) -> tuple[CheckpointPlan, ...]:
    """Cut partitions into checkpoints and assign lanes (in turn, by position).

    An overwrite stream always has at least one checkpoint (an empty source
    must still empty the table).  Its checkpoints need no order among
    themselves: with more than one, each is staged and the run publishes them
    all in one commit at the end (:mod:`headwater.engine._sync`).
    """
    pieces = [list(partitions[i : i + per_checkpoint])
              for i in range(0, len(partitions), per_checkpoint)]
    if overwrite and not pieces:
        pieces = [[]]
    checkpoints = []
    for position, piece in enumerate(pieces):
        index = first_index + position
        lane = position % lanes
        checkpoints.append(CheckpointPlan(index=index, checkpoint_id=f"ckpt-{index}", lane=lane,
                                          partitions=tuple(piece)))
    return tuple(checkpoints)


def checkpoint_count(partition_count: int, per_checkpoint: int, overwrite: bool) -> int:
    count = -(-partition_count // per_checkpoint)
    return max(count, 1) if overwrite else count


def slot_shares(lanes: Sequence[Sequence[CheckpointPlan]], slots: int) -> dict[int, int]:
    """How many of ``slots`` Spark task slots each checkpoint can count on, by index.

    A stream's lanes run their checkpoints at the same time, so the k-th
    checkpoints of the lanes share the slots: each gets ``slots`` divided by how
    many lanes still have a k-th checkpoint (at least one).  A stream whose
    partitions are read as runs of one task per slot
    (:func:`~headwater.engine._task.task_count`) then gives each checkpoint that
    many tasks, each reading a longer run, instead of queueing ``slots`` tasks
    per lane behind each other: every task ended costs a slot about 0.2 s with
    nothing read (``bench/RESULTS.md``).  A lane's last checkpoints, running
    after the other lanes ran dry, get the freed slots.  The engine runs at most
    ``slots`` lanes at once, so no more than that share the slots.
    """
    shares: dict[int, int] = {}
    for lane in lanes:
        for k, checkpoint in enumerate(lane):
            running = min(sum(1 for other in lanes if len(other) > k), slots)
            shares[checkpoint.index] = max(1, slots // running)
    return shares
