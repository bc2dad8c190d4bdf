"""Runs that read again what is already planned or past: ``replay`` and ``backfill``.

Both are recorded runs with a persisted plan, committed exactly like a sync
(one idempotent destination transaction per checkpoint, keyed by fresh
checkpoint indices) and both leave every stream's state where it was:

* **replay** re-reads exactly the partitions a past run committed (its
  persisted plan, less any checkpoint that never committed) and replaces, in
  one transaction per stream, the rows that run wrote
  (``Destination.replace_run``, where the destination's capabilities say it
  can: ``replaces_run_rows``); dedup tables: the re-read rows MERGE under the
  usual latest-cursor rule.  Replayed rows keep
  the replayed run's id, so a replay can itself be repeated; replaying a
  replay replays the run it replayed.
* **backfill** reads one cursor window ``[from, to)`` with the stream's own
  partitioning (:meth:`~headwater.sdk.Stream.window_partitions`) and appends
  (or merges, for dedup tables) what it finds.

Both hold to the connection file's schema contracts as a sync does, at plan time,
before anything is recorded: a change a ``freeze`` contract refuses fails them
(exit code 5), as it fails the sync.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from headwater.engine._contracts import held_to_contracts
from headwater.engine._shared_dir import without_shared_dir
from headwater.engine.connection import resolve_streams
from headwater.errors import ConfigError
from headwater.metadata_store import DURABLE_CHECKPOINT_STATUSES, UNFINISHED_STATUSES
from headwater.plan import ConfiguredStream, RunPlan, StreamPlan
from headwater.sdk import Partition
from headwater.sync_modes import DestinationSyncMode

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from headwater.engine._sync import SyncEngine, SyncResult
    from headwater.metadata_store import RunRecord


def replay(engine: SyncEngine, run_id: str, streams: Sequence[str] | None = None) -> SyncResult:
    """Replay run ``run_id`` of ``engine``'s connection (all its streams, or ``streams``)."""
    run = _replayable_run(engine, run_id)
    destination = engine.destination
    if not destination.capabilities.replaces_run_rows:
        raise ConfigError(f"the {destination.type_name} destination cannot replace a run's "
                          "rows atomically, so it cannot replay a run",
                          field="destination.type")
    checkpoints = engine.store.list_checkpoints(run.run_id)
    # A staged overwrite checkpoint put rows in the table only if its run published.
    published = {c.stream for c in checkpoints if "published" in c.stats}
    committed = {(c.stream, c.index) for c in checkpoints
                 if c.status in DURABLE_CHECKPOINT_STATUSES
                 and (not c.stats.get("staged") or c.stream in published)}
    original = RunPlan.from_dict(run.plan)
    replay_of = original.replay_of or run.run_id
    known = [s.stream.name for s in original.streams]
    for name in streams or ():
        if name not in known:
            raise ConfigError(f"run {run_id} did not sync stream {name!r}; it synced: "
                              f"{', '.join(known) or 'no stream'}", field="--stream")

    def make_plan(spark: SparkSession) -> RunPlan:
        chosen = [p.stream for p in original.streams if not streams or p.stream.name in streams]
        held = {c.name for c in held_to_contracts(engine, chosen, spark)}
        plans = []
        for stream_plan in original.streams:
            name = stream_plan.stream.name
            if name not in held:
                continue
            partitions = without_shared_dir(
                [p for c in stream_plan.checkpoints if (name, c.index) in committed
                 for p in c.partitions], original.shared_dir)
            if not partitions:
                continue  # the run committed nothing of this stream: no rows to replace
            state = engine.store.get_state(engine.connection.name, name)
            plans.append(engine.stream_plan(stream_plan.stream, partitions, state,
                                            per_checkpoint=len(partitions)))
        if not plans:
            raise ConfigError(f"run {run_id} committed no data to replay"
                              + (f" for {', '.join(streams)}" if streams else ""),
                              field="RUN_ID")
        return RunPlan(connection=engine.connection.name, streams=tuple(plans),
                       purpose="replay", replay_of=replay_of)

    return engine.run_plan(make_plan)


def backfill(engine: SyncEngine, stream: str, start: Any, end: Any) -> SyncResult:
    """Read cursor window ``[start, end)`` of ``stream`` again; state does not move."""
    chosen, partitions = backfill_partitions(engine, stream, start, end)

    def make_plan(spark: SparkSession) -> RunPlan:
        from headwater.engine._spark import default_parallelism

        if not held_to_contracts(engine, [chosen], spark):
            raise ConfigError(f"stream {stream!r} has no table yet and its schema_contract "
                              "keeps new tables out: nothing to backfill", field="--stream")
        state = engine.store.get_state(engine.connection.name, stream)
        per_checkpoint = engine.per_checkpoint(default_parallelism(spark))
        plan: StreamPlan = engine.stream_plan(chosen, partitions, state,
                                              per_checkpoint=per_checkpoint)
        return RunPlan(connection=engine.connection.name, streams=(plan,), purpose="backfill")

    return engine.run_plan(make_plan)


def backfill_partitions(engine: SyncEngine, stream: str, start: Any,
                        end: Any) -> tuple[ConfiguredStream, list[Partition]]:
    """The stream and the partitions a backfill of ``[start, end)`` reads, without Spark:
    what :func:`backfill` runs, and what the web page shows before it runs.  Raises
    :class:`ConfigError` for a stream the connection does not sync, an overwrite
    stream, or bounds that are not values of its cursor."""
    configured = {c.name: c for c in resolve_streams(engine.source, engine.connection)}
    if stream not in configured:
        raise ConfigError(f"connection {engine.connection.name} does not sync stream "
                          f"{stream!r}; it syncs: {', '.join(sorted(configured))}",
                          field="--stream")
    chosen = configured[stream]
    if chosen.destination_sync_mode is DestinationSyncMode.OVERWRITE:
        raise ConfigError(f"stream {stream!r} is synced with overwrite: a backfill would "
                          "replace the whole table with one window; backfill append or "
                          "append_dedup streams", field="--stream")
    source_stream = engine.source.stream(stream)
    low, high = window_bounds(source_stream, start, end)
    partitions: list[Partition] = source_stream.window_partitions(low, high)
    return chosen, partitions


def window_bounds(stream: Any, start: Any, end: Any) -> tuple[Any, Any]:
    """``--from``/``--to`` as the stream's stored cursor form (dates, ISO strings, numbers)."""
    from headwater.errors import StateError

    converter = stream.state_converter
    if not stream.cursor_field or converter is None:
        raise ConfigError(f"stream {stream.stream_name!r} has no cursor field, so it has no "
                          "windows to backfill", field="--stream")
    bounds = []
    for option, value in (("--from", start), ("--to", end)):
        try:
            bounds.append(converter.serialize(converter.parse_record_value(value)))
        except StateError as exc:
            raise ConfigError(f"{option} is not a value of cursor {stream.cursor_field!r}: "
                              f"{exc}", field=option) from exc
    return bounds[0], bounds[1]


def _replayable_run(engine: SyncEngine, run_id: str) -> RunRecord:
    run = engine.store.get_run(run_id)
    if run is None:
        raise ConfigError(f"no run {run_id!r} in the metadata store {engine.store.url}; "
                          "see `headwater runs`", field="RUN_ID")
    if run.connection != engine.connection.name:
        raise ConfigError(f"run {run_id} belongs to connection {run.connection}, not "
                          f"{engine.connection.name}", field="RUN_ID")
    if run.status in UNFINISHED_STATUSES:
        raise ConfigError(f"run {run_id} has not finished; `headwater sync` resumes it",
                          field="RUN_ID")
    return run


__all__ = ["backfill", "backfill_partitions", "replay", "window_bounds"]
