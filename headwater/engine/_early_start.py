"""The first thing ``headwater sync`` does: build the source and let it start the run's reads.

Early reads (``Source.prepare``: an Airbyte connector's head start, a REST
source's calls) run while Spark starts, so the sooner they start, the sooner
the sync ends.  This module needs only the connection, the metadata store
(the stored states and whether a run is unfinished: what the reads are
guessed from) and the Spark settings (a local master only), so the command
calls it before it imports or builds the rest of the engine, its output and
the destination; those then happen on the main thread while the reads run on
theirs.  Measured on the substream benchmark's connection: the process had
used 0.93 CPU-seconds when the reads started, now 0.83 (medians of 10).  The
imports that follow hold the GIL the calls' event loop needs, so with 32
calls of 50 ms in flight (the loop busy most of the time) the 800th call came
no sooner (1.87 s from the start, against 1.84 s with the imports first: noise,
medians of 5); the head start pays where the loop mostly waits (fewer calls in
flight, a slower API).

Nothing here takes the connection's lock, records a run or moves state: the
reads are a guess that writes pages into a private folder.  The engine takes
the lock, looks again for an unfinished run and plans under it, and a task uses
an early read only when its partition is exactly the one guessed
(``Source.prepare``); a plan that does not match leaves the folder unused and
the engine removes it (``SyncEngine._end_early_reads``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import UTC, datetime

from headwater.config import ConnectionConfig, SparkConfig
from headwater.engine._shared_dir import make_shared_dir
from headwater.engine._spark import SparkSettings
from headwater.engine.connection import build_source
from headwater.metadata_store import MetadataStore
from headwater.sdk import INCREMENTAL, PlanContext, Source

__all__ = ["EarlyStart", "offer_reads", "start_early"]


@dataclass
class EarlyStart:
    """A built source and what it was told about the run's reads.

    ``context``: what the run will be planned with, when the reads were offered
    (the engine plans with its moment and folder); ``jvm_nice``: how much lower
    Spark's JVM runs, set when the source said it started reads.
    """

    source: Source
    context: PlanContext | None = None
    jvm_nice: int | None = None


def reads_may_start(settings: SparkSettings) -> bool:
    """Whether tasks run on this machine (a local master, not under spark-submit),
    the only place a driver's early reads are of use to them."""
    if settings.remote or (settings.master and not settings.master.startswith("local")):
        return False
    return "PYSPARK_GATEWAY_PORT" not in os.environ  # spark-submit's master: maybe a cluster


def offer_reads(connection: ConnectionConfig, store: MetadataStore, settings: SparkSettings,
                source: Source) -> EarlyStart:
    """Tell ``source`` the run's likely reads (for a new run, on a local master).

    Only a guess from the stored states: the plan, made under the connection's
    lock once Spark is up, decides what is read, and a source uses an early
    read only if it matches.
    """
    early = EarlyStart(source)
    if not reads_may_start(settings):
        return early
    if not connection.streams or store.find_unfinished_run(connection.name) is not None:
        return early
    reads = {configured.name: (store.get_state(connection.name, configured.name)
                               if configured.sync_mode == INCREMENTAL else None)
             for configured in connection.streams}
    # What the plan will be made with, so early reads are the plan's own reads.
    early.context = PlanContext(parallel_tasks=os.cpu_count() or 1,
                                planned_at=datetime.now(UTC), synced_states=reads,
                                shared_dir=make_shared_dir(), reads_early=True)
    if source.prepare(reads, early.context):
        # The reads are the critical path now: Spark's start takes the cores they leave.
        early.jvm_nice = (connection.spark or SparkConfig()).early_reads_jvm_nice
    return early


def start_early(connection: ConnectionConfig, store: MetadataStore,
                settings: SparkSettings) -> EarlyStart:
    """Build the connection's source, give it the engine's hint (``Source.prepare``:
    its streams will be asked for) and offer it the run's reads."""
    source = build_source(connection)
    source.prepare()  # its streams, learned while Spark starts
    return offer_reads(connection, store, settings, source)
