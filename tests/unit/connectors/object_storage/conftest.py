"""Writing objects in every format and reading them back the way a Spark task does."""

from __future__ import annotations

import bz2
import gzip
import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.csv as pa_csv
import pyarrow.parquet as pq
import zstandard

from headwater.connectors.object_storage import ObjectStorageSource, ObjectStream
from headwater.engine._task import TaskContext, read_partition
from headwater.sdk import Partition
from headwater.table_schema import arrow_schema_for

COMPRESSORS = {
    "": lambda b: b,
    ".gz": gzip.compress,
    ".bz2": bz2.compress,
    ".zst": lambda b: zstandard.ZstdCompressor().compress(b),
}

ROWS = [
    {"id": i, "name": f"name {i}", "amount": i * 1.25, "active": i % 2 == 0,
     "at": f"2024-03-0{1 + i % 9}T12:00:{i % 60:02d}Z"}
    for i in range(25)
]

AVRO_SCHEMA = {
    "type": "record", "name": "row",
    "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"},
               {"name": "amount", "type": "double"}, {"name": "active", "type": "boolean"},
               {"name": "at", "type": {"type": "long", "logicalType": "timestamp-micros"}}],
}


def encode(rows: Sequence[Mapping[str, Any]], fmt: str) -> bytes:
    """``rows`` as the bytes of a ``fmt`` object."""
    if fmt == "jsonl":
        return "".join(json.dumps(r) + "\n" for r in rows).encode()
    table = pa.Table.from_pylist(list(rows))
    if "at" in table.column_names:
        at = pa.array([r["at"] for r in rows]).cast(pa.timestamp("us", tz="UTC")) \
            if fmt != "csv" else table.column("at")
        table = table.set_column(table.schema.get_field_index("at"), "at", at)
    out = io.BytesIO()
    if fmt == "csv":
        pa_csv.write_csv(table, out)
    elif fmt == "parquet":
        pq.write_table(table, out, row_group_size=10)
    elif fmt == "avro":
        records = [dict(r) for r in table.to_pylist()]
        fastavro.writer(out, AVRO_SCHEMA, records)
    return out.getvalue()


def write(root: Path, key: str, data: bytes) -> Path:
    path = root / key
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def source(url: str, **stream: Any) -> ObjectStorageSource:
    settings = {k: stream.pop(k) for k in ("recent_keys",) if k in stream}
    return ObjectStorageSource({"url": url, "streams": [{"name": "s", **stream}], **settings})


def read_all(stream: ObjectStream, partitions: Sequence[Partition] | None = None,
             json_columns: Sequence[str] = ()) -> pa.Table:
    """Every partition through the engine's task code: typed columns plus ``_hw_notes``
    (``json_columns``: the table keeps those as JSON text)."""
    context = TaskContext("run", 0, arrow_schema_for(stream.json_schema(), json_columns))
    chosen = stream.partitions(None) if partitions is None else partitions
    batches = [b for p in chosen for b in read_partition(stream, p, context)]
    if not batches:
        return context.output_schema.empty_table()
    return pa.Table.from_batches(batches, schema=context.output_schema)


def rejected(table: pa.Table) -> list[dict[str, Any]]:
    """``{key, record, reasons}`` of every row with notes, sorted by key and record."""
    out = []
    for row in table.select(["_source_key", "_source_record", "_hw_notes"]).to_pylist():
        if row["_hw_notes"]:
            out.append({"key": row["_source_key"], "record": row["_source_record"],
                        "reasons": [n["reason"] for n in row["_hw_notes"]]})
    return sorted(out, key=lambda r: (r["key"], r["record"]))
