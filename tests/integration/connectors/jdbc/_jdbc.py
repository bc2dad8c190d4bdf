"""What the jdbc source's tests share: a sync in this process, and the Delta table's rows."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from headwater.config import load_connection
from headwater.engine import SyncEngine, SyncResult
from headwater.metadata_store import MetadataStore


def sync(path: Path) -> SyncResult:
    """One run of the connection file at ``path``, on the shared Spark session."""
    connection = load_connection(path)
    return SyncEngine(connection, MetadataStore(connection.metadata_store or "")).run()


def landed(spark: Any, folder: Path, stream: str, columns: list[str]) -> Counter[Any]:
    """The rows of ``stream``'s Delta table under ``folder/lake``, as a multiset."""
    rows = spark.read.format("delta").load(str(folder / "lake" / stream)) \
        .select(*columns).toArrow().to_pylist()
    return Counter(tuple(r[c] for c in columns) for r in rows)


def partition_sizes(spark: Any, folder: Path, stream: str) -> Counter[str]:
    """Rows per partition id in ``stream``'s table."""
    return Counter(row for (row,) in landed(spark, folder, stream, ["_hw_partition_id"])
                   .elements())
