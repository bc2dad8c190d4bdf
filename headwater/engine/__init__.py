"""The engine: plans a run, runs its partitions on Spark, commits, releases state.

The driver plans and commits; executors read and write; rows never pass
through the driver.  See ``_sync.py`` for the order of events of one sync.

The names below are imported on first use (PEP 562): every Spark Python
worker imports :mod:`headwater.engine._task` (the function ``mapInArrow``
runs), which imports this package first, and the driver's side (the sync
engine, the metadata store, SQLAlchemy, the config's validation) cost each
new worker about a second of imports it never used (``bench/RESULTS.md``,
PostgreSQL incremental).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from headwater.engine._results import StreamStats, SyncObserver, SyncResult
    from headwater.engine._spark import SparkSettings, get_spark
    from headwater.engine._sync import SyncEngine, SyncOptions
    from headwater.engine.connection import build_source, discover_catalog, resolve_streams
    from headwater.plan import CheckpointPlan, ConfiguredStream, RunPlan, StreamPlan

#: Where each public name lives.
_MODULES = {
    # The plan's model lives below the engine (the destinations use it too).
    "CheckpointPlan": "headwater.plan", "ConfiguredStream": "headwater.plan",
    "RunPlan": "headwater.plan", "StreamPlan": "headwater.plan",
    "SparkSettings": "_spark", "get_spark": "_spark",
    "StreamStats": "_results", "SyncObserver": "_results", "SyncResult": "_results",
    "SyncEngine": "_sync", "SyncOptions": "_sync",
    "build_source": "connection", "discover_catalog": "connection",
    "resolve_streams": "connection",
}


def __getattr__(name: str) -> Any:
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    where = module if "." in module else f"{__name__}.{module}"
    value = getattr(importlib.import_module(where), name)
    globals()[name] = value  # once: later look-ups are plain module attributes
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_MODULES])


__all__ = [
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
