"""A destination in 60 lines: each checkpoint one Parquet file, its name the marker.

The worked example of docs/extending.md.  Exactly once by construction: a
checkpoint's rows are written to a temporary file and renamed to
``<stream>/<lane>-<version>.parquet`` in one step, so the file is there whole
or not at all, and its name (the commit marker's app id and version) is what a
resumed attempt looks up, and what a retried commit finds and skips.  Append
only: it declares ``sync_modes=("append",)`` and refuses the others in
``prepare``, before anything is written.

Register it from your package's ``pyproject.toml``::

    [project.entry-points."headwater.destinations"]
    parquet_log = "my_package.parquet_log_destination:ParquetLogDestination"
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from headwater.destinations import CommitMarker, CommitResult, Destination, DestinationCapabilities


class ParquetLogDestination(Destination):
    type_name = "parquet_log"
    guarantee = "exactly-once"
    capabilities = DestinationCapabilities(sync_modes=("append",))

    @classmethod
    def spec(cls) -> dict[str, Any]:
        return {"type": "object", "required": ["path"],
                "properties": {"path": {"type": "string", "description": "a local folder"}}}

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        self.root = Path(self.config["path"])

    def table_location(self, stream: str) -> str:
        return str(self.root / stream)

    def prepare(self, spark: Any, plan: Any, data_schema: pa.Schema) -> pa.Schema:
        mode = plan.stream.destination_sync_mode.value
        if mode not in self.capabilities.sync_modes:
            raise ValueError(f"parquet_log only appends; {plan.stream.name} asks for {mode}")
        (self.root / plan.stream.name).mkdir(parents=True, exist_ok=True)
        return data_schema

    def find_commit(self, spark: Any, plan: Any, marker: CommitMarker) -> CommitResult | None:
        path = self._file(marker)
        if not path.exists():
            return None
        rows = pq.read_metadata(path).num_rows
        return CommitResult(rows=rows, rejected=0, bytes=path.stat().st_size, version=None,
                            already_committed=True)

    def commit(self, spark: Any, plan: Any, checkpoint: Any, rows: Any,
               marker: CommitMarker) -> CommitResult:
        found = self.find_commit(spark, plan, marker)
        if found is not None:  # a retried checkpoint: it landed already
            return found
        table = rows.toArrow()  # small checkpoints: the rows come to the driver
        path = self._file(marker)
        temporary = path.with_suffix(".tmp")
        pq.write_table(table, temporary)
        os.replace(temporary, path)  # the commit point
        return CommitResult(rows=table.num_rows, rejected=0, bytes=path.stat().st_size,
                            version=marker.version)

    def read_table(self, spark: Any, stream: str, columns: Sequence[str] | None = None) -> Any:
        """The stream's rows as its readers see them, by Spark (what ``headwater verify``
        counts and the kit checks); the columns asked that the table has."""
        files = sorted(str(f) for f in (self.root / stream).glob("*.parquet"))
        frame = spark.read.parquet(*files)  # no file yet: Spark says the path is missing
        return frame.select(*[c for c in columns or frame.columns if c in frame.columns])

    def _file(self, marker: CommitMarker) -> Path:
        lane = hashlib.sha256(marker.app_id.encode()).hexdigest()[:16]
        return self.root / marker.stream / f"{lane}-{marker.version}.parquet"
