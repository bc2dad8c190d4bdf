"""Rows built to tell ``append_dedup``'s tie rules apart, for each destination's tie tests.

Every row is id 1 at cursor 5, so only where it came from decides: the later
checkpoint, then the later partition, then the later record.  ``_hw_raw_id`` is
``<partition digest>-<record number>``, built so that both text orders are wrong.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pyarrow as pa

from headwater.engine._task import _partition_digest
from headwater.plan import ConfiguredStream
from headwater.sdk import Partition
from headwater.table_schema import META_FIELDS

STREAM = ConfiguredStream(name="items", sync_mode="incremental",
                          destination_sync_mode="append_dedup", cursor_field="updated",
                          primary_key=("id",))
SCHEMA = {"type": "object", "properties": {"id": {"type": "integer"},
                                          "updated": {"type": "integer"},
                                          "version": {"type": "integer"}}}


def tie_rows(spark: Any, records: list[tuple[Partition, int, int]], checkpoint: int) -> Any:
    """Rows of ``(partition, record number, version)``, every one id 1 at cursor 5."""
    now = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    columns: dict[str, list[Any]] = {f.name: [] for f in META_FIELDS}
    columns.update(id=[], updated=[], version=[])
    for partition, number, version in records:
        columns["_hw_raw_id"].append(f"{_partition_digest(partition)}-{number}")
        columns["_hw_extracted_at"].append(now)
        columns["_hw_run_id"].append("run-1")
        columns["_hw_partition_id"].append(partition.id)
        columns["_hw_checkpoint"].append(checkpoint)
        columns["_hw_notes"].append(None)
        columns["id"].append(1)
        columns["updated"].append(5)
        columns["version"].append(version)
    data = [pa.field(name, pa.int64()) for name in ("id", "updated", "version")]
    schema = pa.schema([*META_FIELDS, *data])
    return spark.createDataFrame(pa.table(columns, schema=schema).to_pandas())
