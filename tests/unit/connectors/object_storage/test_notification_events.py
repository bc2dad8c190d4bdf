"""Notification discovery without a queue: event parsing, the cursor's acks, refusals."""

from __future__ import annotations

import json

import pytest

from headwater.connectors.object_storage._cursor import ObjectCursor
from headwater.connectors.object_storage._notifications import event_paths
from headwater.connectors.object_storage._source import ObjectStorageSource
from headwater.errors import ConfigError
from headwater.sdk import Partition


def record(event: str, bucket: str, key: str) -> dict[str, object]:
    return {"eventSource": "aws:s3", "eventName": event,
            "s3": {"bucket": {"name": bucket}, "object": {"key": key, "size": 1}}}


def test_created_keys_are_decoded_and_other_messages_hold_none() -> None:
    body = json.dumps({"Records": [record("ObjectCreated:Put", "b", "in/a+b%2Bc%3D1.json"),
                                   record("ObjectRemoved:Delete", "b", "in/gone.json"),
                                   record("ObjectCreated:CompleteMultipartUpload", "b",
                                          "in/%C3%A9t%C3%A9.json")]})
    assert event_paths(body) == ("b/in/a b+c=1.json", "b/in/été.json")
    sns = json.dumps({"Type": "Notification", "Message": json.dumps(
        {"Records": [record("ObjectCreated:Copy", "b", "x.json")]})})
    assert event_paths(sns) == ("b/x.json",)
    for other in ('{"Service": "Amazon S3", "Event": "s3:TestEvent", "Bucket": "b"}',
                  "not json", "[1, 2]", '{"Records": [{"s3": null}]}'):
        assert event_paths(other) == ()


def test_a_key_acks_its_messages_when_its_last_part_commits() -> None:
    def part(start: int, end: int) -> Partition:
        return Partition("s", f"big#{start}", {
            "key": "big", "identity": "e", "unit": "bytes", "start": start, "end": end,
            "total": 10, "messages": {"big": ["h1", "h2"]}})

    cursor = ObjectCursor(None, 100)
    cursor.close_partition(part(0, 5))
    assert "acks" not in cursor.state()
    cursor.close_partition(part(5, 10))
    assert cursor.state()["acks"] == ["h1", "h2"]
    # a cursor loaded from a saved state starts with no acks (see _cursor's docstring)
    assert "acks" not in ObjectCursor(cursor.state(), 100).state()


def notified(url: str) -> dict[str, object]:
    return {"url": url, "region": "us-east-1", "streams": [{
        "name": "s", "discovery": {"mode": "notifications", "queue_url": "http://q/1/q"}}]}


def test_notifications_need_s3_and_an_incremental_stream(tmp_path: object) -> None:
    with pytest.raises(ConfigError, match="must be s3://"):
        ObjectStorageSource(notified(f"file://{tmp_path}"))
    stream = ObjectStorageSource(notified("s3://bucket")).stream("s")
    with pytest.raises(ConfigError, match="must be incremental"):
        stream.cursor(None, incremental=False)
