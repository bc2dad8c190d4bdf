"""The plan of a run: which partitions, grouped into which checkpoints, in which order.

A plan is made once, persisted with the run *before* any data is read, and
never recomputed for that run: a resumed attempt re-executes exactly the same
checkpoints, which is what lets the destination recognise (and skip) the ones a
killed attempt already committed.

The model lives here, below the engine that makes and runs plans and the
destinations that commit them, so neither depends on the other; the engine's
grouping rules are in :mod:`headwater.engine._plan`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from headwater.sdk import Partition
from headwater.sync_modes import DestinationSyncMode, SyncMode

__all__ = ["RUN_PURPOSES", "CheckpointPlan", "ConfiguredStream", "RunPlan", "StreamPlan",
           "TableLayout"]


@dataclass(frozen=True)
class TableLayout:
    """How the connection wants a stream's table laid out (the stream's settings in the file).

    Applied when the destination creates the table; a table that exists keeps
    its partitioning and clustering (changing either rewrites the table, which
    a sync does not do behind anyone's back), while ``properties`` it lacks or
    holds with another value are set.  ``partition_by`` and ``cluster_by`` are
    mutually exclusive (checked when the connection file is loaded).
    """

    #: Columns the table is partitioned by (Hive-style folders), in order.
    partition_by: tuple[str, ...] = ()
    #: Columns the table is clustered by (Delta's liquid clustering).
    cluster_by: tuple[str, ...] = ()
    #: Table properties (``TBLPROPERTIES``), strings as the table keeps them.
    properties: Mapping[str, str] = field(default_factory=dict, hash=False)

    @property
    def is_default(self) -> bool:
        """Whether the stream asks nothing of its table's layout."""
        return not (self.partition_by or self.cluster_by or self.properties)

    def to_dict(self) -> dict[str, Any]:
        return {"partition_by": list(self.partition_by), "cluster_by": list(self.cluster_by),
                "properties": dict(self.properties)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> TableLayout:
        data = data or {}
        return cls(partition_by=tuple(data.get("partition_by") or ()),
                   cluster_by=tuple(data.get("cluster_by") or ()),
                   properties={str(k): str(v) for k, v in (data.get("properties") or {}).items()})


@dataclass(frozen=True)
class ConfiguredStream:
    """A stream as the connection wants it synced (connection file + source defaults)."""

    name: str
    sync_mode: SyncMode
    destination_sync_mode: DestinationSyncMode
    cursor_field: str | None
    primary_key: tuple[str, ...]
    #: Columns kept as JSON text (the stream's ``json_columns``) instead of VARIANT or structs.
    json_columns: tuple[str, ...] = ()
    #: The table's partitioning, clustering and properties (the stream's ``partition_by``,
    #: ``cluster_by`` and ``table_properties``).
    table_layout: TableLayout = field(default_factory=TableLayout)
    #: What an ``append_dedup`` stream's CDC deletes do: ``soft`` (the row kept, flagged)
    #: or ``hard`` (the row deleted by the checkpoint's commit).
    deletes: str = "soft"

    def __post_init__(self) -> None:
        # Plain strings (a plan read back from JSON, a caller's literal) become members.
        object.__setattr__(self, "sync_mode", SyncMode(self.sync_mode))
        object.__setattr__(self, "destination_sync_mode",
                           DestinationSyncMode(self.destination_sync_mode))

    @property
    def incremental(self) -> bool:
        return self.sync_mode is SyncMode.INCREMENTAL

    @property
    def mode_label(self) -> str:
        return f"{self.sync_mode}+{self.destination_sync_mode}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "sync_mode": self.sync_mode.value,
            "destination_sync_mode": self.destination_sync_mode.value,
            "cursor_field": self.cursor_field,
            "primary_key": list(self.primary_key),
            "json_columns": list(self.json_columns),
            "table_layout": self.table_layout.to_dict(),
            "deletes": self.deletes,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ConfiguredStream:
        return cls(
            name=data["name"],
            sync_mode=SyncMode(data["sync_mode"]),
            destination_sync_mode=DestinationSyncMode(data["destination_sync_mode"]),
            cursor_field=data.get("cursor_field"),
            primary_key=tuple(data.get("primary_key") or ()),
            json_columns=tuple(data.get("json_columns") or ()),
            table_layout=TableLayout.from_dict(data.get("table_layout")),
            deletes=str(data.get("deletes") or "soft"),
        )


@dataclass(frozen=True)
class CheckpointPlan:
    """One batch of partitions committed in one destination transaction.

    ``index`` is global per (connection, stream) and only grows across runs; it
    is the release order and the version of the checkpoint's commit marker.
    ``lane`` is the sequence of commits the checkpoint belongs to: commits within
    a lane happen in index order, lanes run side by side (so each lane's marker
    sees growing versions, which idempotent commits require: Delta's ``txn``).
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
    #: When the run was planned (ISO 8601, UTC): persisted with the plan, so every attempt
    #: of the run sees the same value.  A ``history`` stream whose cursor is not a time
    #: dates its versions by it (``docs/history.md``); empty in plans made before it existed.
    planned_at: str = ""

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
            "planned_at": self.planned_at,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StreamPlan:
        return cls(
            stream=ConfiguredStream.from_dict(data["stream"]),
            state_before=data.get("state_before"),
            lanes=int(data["lanes"]),
            checkpoints=tuple(CheckpointPlan.from_dict(c) for c in data["checkpoints"]),
            json_schema=dict(data.get("json_schema") or {}),
            planned_at=str(data.get("planned_at") or ""),
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
    #: The folder the run's tasks share (``PlanContext.shared_dir``); removed with the run.
    shared_dir: str | None = None

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
        if self.shared_dir is not None:
            data["shared_dir"] = self.shared_dir
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunPlan:
        return cls(
            connection=data["connection"],
            streams=tuple(StreamPlan.from_dict(s) for s in data["streams"]),
            purpose=str(data.get("purpose") or "sync"),
            replay_of=data.get("replay_of"),
            shared_dir=data.get("shared_dir"),
        )
