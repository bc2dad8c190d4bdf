"""A topic's JSON Schema: the fields of its newest values, then the declared ones.

A JSON topic's columns are learned from a sample of its newest records (the schema
of what is produced now, which is what a sync lands), typed as a JSON Lines
object's sample is (:func:`~headwater.connectors.object_storage._inference.
jsonl_sample_schema`: dates and date-times told apart, integers past int64 kept
exact), and the config's ``schema`` for the topic overrides or adds fields, as the
object storage source's ``schema`` does.  A field a later record adds that the
sample did not see is not lost: the engine notes it on the row.  A raw topic has
one data column, ``value``.  Both get the provenance columns (:mod:`._decode`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from headwater.connectors.kafka._config import KafkaConfig
from headwater.connectors.kafka._decode import RAW_VALUE, meta_properties
from headwater.connectors.kafka._reader import read_range
from headwater.connectors.object_storage._inference import json_schema_of, jsonl_sample_schema

__all__ = ["topic_schema"]


def _sample_lines(settings: KafkaConfig, topic: str,
                  offsets: Mapping[int, tuple[int, int]]) -> bytes:
    """The newest values of every partition, as JSON Lines (a pretty-printed value is
    written on one line again)."""
    if settings.sample_records == 0 or not offsets:
        return b""
    each = math.ceil(settings.sample_records / len(offsets))
    lines = []
    for partition, (low, end) in sorted(offsets.items()):
        for message in read_range(settings, topic, partition, max(low, end - each), end):
            value = message.value()
            if not value:
                continue
            if b"\n" in value or b"\r" in value:
                try:
                    value = json.dumps(json.loads(value)).encode()
                except ValueError:
                    continue
            lines.append(value)
    return b"\n".join(lines)


def topic_schema(settings: KafkaConfig, topic: str,
                 offsets: Mapping[int, tuple[int, int]]) -> dict[str, Any]:
    """The stream's JSON Schema (see the module docstring); ``offsets``: per partition,
    the log start and end offsets."""
    properties: dict[str, Any] = {}
    if settings.value_format == "raw":
        properties[RAW_VALUE] = meta_properties(settings.raw_encoding)["_kafka_key"]
    else:
        lines = _sample_lines(settings, topic, offsets)
        if lines:
            arrow = jsonl_sample_schema(lines, settings.sample_records)
            properties.update({f.name: json_schema_of(f.type) for f in arrow})
        for name, prop in (settings.json_schema.get(topic) or {}).items():
            properties[name] = dict(prop)
    properties.update(meta_properties(settings.raw_encoding))
    return {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
            "properties": properties}
