"""What one row becomes in Kafka: key, value and provenance headers.

Why the JSON is made by Spark (``to_json``) and not in Python: it is the same
encoder Spark's own Kafka sink is used with, it runs in the JVM over whole
batches, and its output is stable: fields in column order, no spaces.  The
task (``_produce.py``) only hands the prepared strings to the producer.

* **key**: the primary key as a JSON object of the key columns in key order
  (``{"id":7}``, ``{"a":1,"b":"x"}``); null when the stream has none;
* **value**: the row's data columns as a JSON object, nulls kept
  (``"email":null``); decimals as exact JSON numbers (Spark writes the
  ``BigDecimal``: ``12.50``, sometimes with an exponent, ``1.0E-8``, never
  rounded); timestamps as ISO 8601 with microseconds in UTC
  (``2024-05-01T12:00:00.000000Z``), local timestamps without an offset;
  dates ``2024-05-01``; binary as base64; NaN and infinities as the strings
  ``"NaN"``, ``"Infinity"``.  A deleted row of an ``append_dedup`` stream (its
  :data:`DELETED_COLUMNS` flag true) has a null value: a Kafka tombstone;
* **headers** (:func:`headers`): where the record came from, as in seed 002.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from headwater.destinations._deletes import DELETED_COLUMNS, deleted_column

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

#: ``to_json`` options: ISO 8601 with microseconds, nulls kept.
JSON_OPTIONS = {"timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX",
                "timestampNTZFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS",
                "dateFormat": "yyyy-MM-dd", "ignoreNullFields": "false", "timeZone": "UTC"}
#: The prepared frame's columns, in the order the task reads them.
KEY, VALUE, UNIT, RECORD, NOTES = "k", "v", "u", "r", "n"
KEY_AT, VALUE_AT, UNIT_AT, RECORD_AT, NOTES_AT = range(5)

# Header names (values are UTF-8 text).
H_STREAM, H_PARTITION, H_RECORD = "headwater.stream", "headwater.partition", "headwater.record"
H_RUN, H_CHECKPOINT, H_NOTES = "headwater.run_id", "headwater.checkpoint", "headwater.notes"


def prepare(rows: DataFrame, data_columns: Sequence[str], primary_key: Sequence[str], *,
            tombstones: bool, unit: Column | None = None) -> DataFrame:
    """``rows`` as the task reads them: key, value, unit, record number, notes.

    ``unit`` is what one transaction holds (default: the row's source partition);
    with ``tombstones``, a row whose delete flag is true gets a null value.
    """
    from pyspark.sql import functions as F

    data = [F.col(f"`{name}`") for name in data_columns]
    value = F.to_json(F.struct(*data), JSON_OPTIONS)
    flag = deleted_column(data_columns) if tombstones else None
    if flag is not None:
        value = F.when(F.col(f"`{flag}`"), F.lit(None).cast("string")).otherwise(value)
    key = (F.to_json(F.struct(*[F.col(f"`{k}`") for k in primary_key]), JSON_OPTIONS)
           if primary_key else F.lit(None).cast("string"))
    notes = F.when(F.col("_hw_notes").isNull(), F.lit(None).cast("string")) \
        .otherwise(F.to_json(F.col("_hw_notes")))
    return rows.select(key.alias(KEY), value.alias(VALUE),
                       (unit if unit is not None else F.col("_hw_partition_id")).alias(UNIT),
                       F.substring_index(F.col("_hw_raw_id"), "-", -1).alias(RECORD),
                       notes.alias(NOTES))


def headers(stream: str, partition: str, record: str, run_id: str, checkpoint: str,
            notes: str | None) -> list[tuple[str, str | bytes | None]]:
    """A record's provenance headers: its stream, source partition (an object storage
    source's partition is its object key), record number within that partition, run
    and checkpoint; the notes of values that did not fit, when it has any (the
    producer sends each value as UTF-8)."""
    found: list[tuple[str, str | bytes | None]] = [
        (H_STREAM, stream), (H_PARTITION, partition), (H_RECORD, record), (H_RUN, run_id),
        (H_CHECKPOINT, checkpoint)]
    if notes is not None:
        found.append((H_NOTES, notes))
    return found


__all__ = ["DELETED_COLUMNS", "JSON_OPTIONS", "deleted_column", "headers", "prepare"]
