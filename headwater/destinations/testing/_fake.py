"""A destination without a table format, so the engine's tests need no Delta.

Shipped in :mod:`headwater.destinations.testing` for destination authors: the
smallest destination that keeps the whole contract, to read as a model and to
test the engine (and the conformance run) with.

It keeps each stream's table as Parquet files in a folder with a JSON log of
commits (``log.jsonl``: one line per commit, its marker's app id, version and
tag, and the files the table consists of after it), and honours the
:class:`~headwater.destinations.Destination` contract the engine relies on:
idempotent commits found again by marker, overwrites staged then published in
one commit, ``append_dedup`` merged by key under the latest-cursor rule, and a
replay replacing one run's rows.  Rows reach it through Spark
(``DataFrame.toArrow``); it declares no Spark needs, no task-written files and
one commit lane for every mode (its log is appended by one writer at a time),
so a test can see the engine honour those capabilities.

Not a product: one process writes a table at a time, and every commit
rewrites the table's list of files.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from headwater.destinations import (
    CommitMarker,
    CommitResult,
    Destination,
    DestinationCapabilities,
)
from headwater.destinations._base import PublishMarker
from headwater.destinations._dataset import without_credentials

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from headwater.plan import CheckpointPlan, StreamPlan

MODES = ("overwrite", "append", "append_dedup")


class FakeDestination(Destination):
    type_name = "fake"
    guarantee = "exactly-once"
    capabilities = DestinationCapabilities(
        max_concurrent_commits=dict.fromkeys(MODES, 1),
        task_written_files=False,
        stages_overwrites=True,
        replaces_run_rows=True,
        commit_id="fake_commit",
    )

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        self.root = Path(self.config["path"])
        self._lock = threading.Lock()
        #: Every commit the engine asked for, in order: (stream, app id, version, kind).
        self.calls: list[tuple[str, str, int, str]] = []

    @classmethod
    def spec(cls) -> dict[str, Any]:
        return {"type": "object", "required": ["path"],
                "properties": {"path": {"type": "string"}}}

    def table_location(self, stream: str) -> str:
        return str(self.root / stream)

    def dataset_namespace(self) -> str:
        return without_credentials(str(self.root))

    # ------------------------------------------------------------------ reading

    def read_table(self, spark: SparkSession, stream: str,
                   columns: Sequence[str] | None = None) -> DataFrame:
        """The hook ``headwater verify`` and the conformance run read with: the current
        files, read by Spark (columns added later merged in, null in older files)."""
        from headwater.destinations._read_frames import select_present
        from headwater.errors import DestinationError

        files = self._current_files(stream)
        if not files:
            raise DestinationError(f"no table of stream {stream} yet", stream=stream)
        frame = spark.read.option("mergeSchema", "true").parquet(
            *[str(self.root / stream / f) for f in files])
        return select_present(frame, columns)

    def read_arrow(self, stream: str) -> pa.Table:
        """The stream's table as a reader sees it now, on the driver (for tests)."""
        files = self._current_files(stream)
        if not files:
            return pa.table({})
        return pa.concat_tables([pq.read_table(self.root / stream / f) for f in files],
                                promote_options="permissive")

    def log(self, stream: str) -> list[dict[str, Any]]:
        path = self.root / stream / "log.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line]

    def _current_files(self, stream: str) -> list[str]:
        entries = self.log(stream)
        return list(entries[-1]["files"]) if entries else []

    # ------------------------------------------------------------------ the contract

    def prepare(self, spark: SparkSession, plan: StreamPlan, data_schema: pa.Schema) -> pa.Schema:
        (self.root / plan.stream.name / "staging").mkdir(parents=True, exist_ok=True)
        return data_schema

    def find_commit(self, spark: SparkSession, plan: StreamPlan,
                    marker: CommitMarker) -> CommitResult | None:
        return self._landed(plan.stream.name, marker.app_id, marker.version)

    def _called(self, kind: str, stream: str, marker: CommitMarker) -> CommitResult | None:
        """Note the engine's call; the commit it asks for, if that already landed."""
        self.calls.append((stream, marker.app_id, marker.version, kind))
        return self._landed(stream, marker.app_id, marker.version)

    def _landed(self, stream: str, app_id: str, version: int) -> CommitResult | None:
        """The commit of ``app_id``/``version`` in the stream's log, if it landed."""
        for entry in self.log(stream):
            if entry["app_id"] == app_id and entry["version"] == version:
                return CommitResult(rows=entry["rows"], rejected=entry["rejected"], bytes=0,
                                    version=entry["number"], already_committed=True)
        return None

    def commit(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
               rows: DataFrame, marker: CommitMarker) -> CommitResult:
        stream = plan.stream.name
        with self._lock:
            found = self._called("commit", stream, marker)
            if found is not None:
                return found
            batch = rows.toArrow()
            mode = plan.stream.destination_sync_mode
            if mode == "overwrite":
                table = batch
            elif mode == "append_dedup":
                table = _merge(self.read_arrow(stream), batch, plan)
            else:
                table = None
            if table is None:
                files = [*self._current_files(stream), self._write(stream, batch)]
            else:
                files = [self._write(stream, table)]
            return self._log(stream, marker.app_id, marker.version, marker.tag, files, batch)

    def stage(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
              rows: DataFrame, marker: CommitMarker) -> CommitResult:
        stream = plan.stream.name
        staged = self._staged_file(stream, marker)
        with self._lock:
            self.calls.append((stream, marker.app_id, marker.version, "stage"))
            if not staged.exists():
                batch = rows.toArrow()
                temporary = staged.with_suffix(".tmp")
                pq.write_table(batch, temporary)
                temporary.rename(staged)
            batch = pq.read_table(staged)
            return CommitResult(rows=batch.num_rows, rejected=_rejected(batch), bytes=0,
                                version=None)

    def find_staged(self, spark: SparkSession, plan: StreamPlan,
                    marker: CommitMarker) -> CommitResult | None:
        staged = self._staged_file(plan.stream.name, marker)
        if not staged.exists():
            return None
        batch = pq.read_table(staged)
        return CommitResult(rows=batch.num_rows, rejected=_rejected(batch), bytes=0,
                            version=None, already_committed=True)

    def publish(self, spark: SparkSession, plan: StreamPlan,
                marker: PublishMarker) -> CommitResult:
        stream = plan.stream.name
        with self._lock:
            self.calls.append((stream, marker.app_id, marker.version, "publish"))
            found = self._landed(stream, marker.app_id, marker.version)
            if found is not None:
                return found
            staging = self.root / stream / "staging" / marker.run_id
            parts = [staging / f"{index}.parquet" for index in marker.checkpoints]
            missing = [p.name for p in parts if not p.exists()]
            if missing:
                raise RuntimeError(f"cannot publish {stream}: not staged: {missing}")
            batch = pa.concat_tables([pq.read_table(p) for p in parts],
                                     promote_options="permissive")
            return self._log(stream, marker.app_id, marker.version, marker.tag,
                             [self._write(stream, batch)], batch)

    def replace_run(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
                    rows: DataFrame, marker: CommitMarker, *,
                    replaced_run_id: str) -> CommitResult:
        stream = plan.stream.name
        with self._lock:
            found = self._called("replace_run", stream, marker)
            if found is not None:
                return found
            batch = rows.toArrow()
            current = self.read_arrow(stream)
            if current.num_columns:
                kept = [r for r in current.to_pylist() if r["_hw_run_id"] != replaced_run_id]
                table = pa.concat_tables([pa.Table.from_pylist(kept, schema=current.schema),
                                          batch.cast(current.schema)])
            else:
                table = batch
            return self._log(stream, marker.app_id, marker.version, marker.tag,
                             [self._write(stream, table)], batch)

    def abort(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
              marker: CommitMarker) -> None:
        """Drop a staging the checkpoint began and never finished (its ``.tmp`` file)."""
        self.calls.append((plan.stream.name, marker.app_id, marker.version, "abort"))
        self._staged_file(plan.stream.name, marker).with_suffix(".tmp").unlink(missing_ok=True)

    # ------------------------------------------------------------------ storage

    def _staged_file(self, stream: str, marker: CommitMarker) -> Path:
        folder = self.root / stream / "staging" / marker.run_id
        folder.mkdir(parents=True, exist_ok=True)
        return folder / f"{marker.checkpoint_index}.parquet"

    def _write(self, stream: str, table: pa.Table) -> str:
        name = f"part-{uuid.uuid4().hex}.parquet"
        pq.write_table(table, self.root / stream / name)
        return name

    def _log(self, stream: str, app_id: str, version: int, tag: str, files: list[str],
             batch: pa.Table) -> CommitResult:
        """Append one commit to the stream's log: the commit point."""
        number = len(self.log(stream))
        entry = {"number": number, "app_id": app_id, "version": version, "tag": tag,
                 "files": files, "rows": batch.num_rows, "rejected": _rejected(batch)}
        with open(self.root / stream / "log.jsonl", "a") as log:
            log.write(json.dumps(entry) + "\n")
        return CommitResult(rows=batch.num_rows, rejected=_rejected(batch), bytes=0,
                            version=number, writer="fake", writer_reason="the test's fake")


def _rejected(batch: pa.Table) -> int:
    if "_hw_notes" not in batch.column_names:
        return 0
    return batch.num_rows - batch.column("_hw_notes").null_count


def _merge(current: pa.Table, batch: pa.Table, plan: StreamPlan) -> pa.Table:
    """``current`` with ``batch`` merged on the primary key: of two rows of one key, the
    later cursor wins, then the later checkpoint (the Delta destination's rule)."""
    keys = list(plan.stream.primary_key)
    cursor = plan.stream.cursor_field

    def rank(row: Mapping[str, Any]) -> tuple[Any, ...]:
        value = row.get(cursor) if cursor else None
        record = int(str(row["_hw_raw_id"]).rsplit("-", 1)[-1])
        return (value is not None, value if value is not None else 0, row["_hw_checkpoint"],
                record)

    merged: dict[tuple[Any, ...], dict[str, Any]] = {}
    rows = (current.to_pylist() if current.num_columns else []) + batch.to_pylist()
    for row in rows:
        key = tuple(row[k] for k in keys)
        if key not in merged or rank(row) >= rank(merged[key]):
            merged[key] = row
    schema = batch.schema if not current.num_columns else current.schema
    return pa.Table.from_pylist(list(merged.values()), schema=schema)
