"""One Kafka record into one row: the value's fields (JSON) or the value itself (raw),
and where it came from.

Every row carries the provenance columns ``_kafka_topic``, ``_kafka_partition``,
``_kafka_offset`` (the three together identify a record for ever: offsets are
never reused), ``_kafka_timestamp``, ``_kafka_key`` and ``_kafka_headers``, as the
object storage source's rows carry ``_source_key`` and ``_source_record``.

A value that cannot be read (not JSON, not an object, not UTF-8 text) is not
dropped: the row keeps its provenance and gets a note in ``_hw_notes`` saying why,
so the engine counts it as rejected and the table keeps where to find it.  A
record without a value (a tombstone of a compacted topic) is a row of provenance
only.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal

from headwater import json_numbers
from headwater.table_schema import MAX_NOTE_VALUE, READER_NOTES

__all__ = ["META_COLUMNS", "RAW_VALUE", "meta_properties", "to_record"]

TOPIC, PARTITION, OFFSET = "_kafka_topic", "_kafka_partition", "_kafka_offset"
TIMESTAMP, KEY, HEADERS = "_kafka_timestamp", "_kafka_key", "_kafka_headers"
META_COLUMNS = (TOPIC, PARTITION, OFFSET, TIMESTAMP, KEY, HEADERS)
#: The column a raw value lands in.
RAW_VALUE = "value"

Encoding = Literal["text", "bytes"]


def _bytes_property(encoding: Encoding) -> dict[str, Any]:
    if encoding == "bytes":
        return {"type": ["null", "string"], "contentEncoding": "base64"}
    return {"type": ["null", "string"]}


def meta_properties(encoding: Encoding) -> dict[str, Any]:
    """The JSON Schema properties of the provenance columns."""
    return {
        TOPIC: {"type": "string"},
        PARTITION: {"type": "integer"},
        OFFSET: {"type": "integer"},
        TIMESTAMP: {"type": ["null", "string"], "format": "date-time"},
        KEY: _bytes_property(encoding),
        HEADERS: {"type": ["null", "array"], "items": {
            "type": "object", "properties": {"key": {"type": "string"},
                                             "value": _bytes_property(encoding)}}},
    }


def _note(field: str, reason: str, value: bytes | str | None) -> dict[str, str]:
    text = value.decode("utf-8", errors="backslashreplace") if isinstance(value, bytes) \
        else (value or "")
    if len(text) > MAX_NOTE_VALUE:
        text = text[:MAX_NOTE_VALUE] + "…"
    return {"field": field, "reason": reason, "value": text}


def _bytes_value(data: bytes | None, encoding: Encoding, field: str,
                 notes: list[dict[str, str]]) -> bytes | str | None:
    if data is None or encoding == "bytes":
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        notes.append(_note(field, f"not UTF-8 text ({exc.reason} at byte {exc.start}); set "
                                  "raw_encoding: bytes to keep such values", data))
        return None


def to_record(topic: str, partition: int, offset: int, timestamp_ms: int | None,
              key: bytes | None, value: bytes | None,
              headers: Sequence[tuple[str, bytes | None]] | None, *,
              value_format: Literal["json", "raw"], encoding: Encoding) -> dict[str, Any]:
    """The row of one record (see the module docstring)."""
    notes: list[dict[str, str]] = []
    row: dict[str, Any] = {}
    if value_format == "raw":
        row[RAW_VALUE] = _bytes_value(value, encoding, RAW_VALUE, notes)
    elif value is not None:
        try:
            parsed = json_numbers.loads(value)
        except (ValueError, UnicodeDecodeError) as exc:
            notes.append(_note("", f"the value is not JSON: {exc}", value))
        else:
            if isinstance(parsed, dict):
                row.update(parsed)
            else:
                notes.append(_note("", f"the value is JSON {type(parsed).__name__}, not an "
                                       "object", value))
    row[TOPIC] = topic
    row[PARTITION] = partition
    row[OFFSET] = offset
    row[TIMESTAMP] = (datetime.fromtimestamp(timestamp_ms / 1000, tz=UTC)
                      if timestamp_ms is not None and timestamp_ms >= 0 else None)
    row[KEY] = _bytes_value(key, encoding, KEY, notes)
    row[HEADERS] = [{"key": name, "value": _bytes_value(data, encoding, f"{HEADERS}.{name}",
                                                         notes)}
                    for name, data in headers or ()] or None
    if notes:
        row[READER_NOTES] = notes
    return row
