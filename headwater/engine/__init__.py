"""The engine: plans a run, runs its partitions on Spark, commits, releases state.

The driver plans and commits; executors read and write; rows never pass
through the driver.  See ``_sync.py`` for the order of events of one sync.
"""

from headwater.engine._plan import CheckpointPlan, ConfiguredStream, RunPlan, StreamPlan
from headwater.engine._spark import DELTA_PACKAGE, SparkSettings, get_spark
from headwater.engine._sync import (
    StreamStats,
    SyncEngine,
    SyncObserver,
    SyncOptions,
    SyncResult,
)
from headwater.engine.connection import build_source, discover_catalog, resolve_streams

__all__ = [
    "DELTA_PACKAGE",
    "CheckpointPlan",
    "ConfiguredStream",
    "RunPlan",
    "SparkSettings",
    "StreamPlan",
    "StreamStats",
    "SyncEngine",
    "SyncObserver",
    "SyncOptions",
    "SyncResult",
    "build_source",
    "discover_catalog",
    "get_spark",
    "resolve_streams",
]
