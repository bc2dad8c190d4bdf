"""Notification discovery on moto's S3 server, whose buckets send their S3 events to its SQS.

The plan-level tests (no Spark) follow the messages: deleted at once when there
is nothing to read, kept while their objects are read, deleted after the state
is saved, and, when a crash kept them in the queue, received again and skipped
as already read.  The end-to-end test syncs one bucket in both discovery modes
into two tables and compares them.
"""

from __future__ import annotations

import signal
import uuid
from pathlib import Path
from typing import Any

import pytest

from headwater.connectors.object_storage._source import ObjectStorageSource
from headwater.errors import ConnectorError
from headwater.sdk import Partition
from tests.integration._cli import store, sync, sync_runs
from tests.integration._in_process import sync_in_process
from tests.integration.connectors.object_storage.conftest import ACCESS_KEY, SECRET_KEY, S3Server
from tests.integration.connectors.object_storage.test_object_storage_sync import (
    connection,
    rows,
    run,
)
from tests.unit.connectors.object_storage.conftest import ROWS, encode


def sqs(server: S3Server) -> Any:
    import boto3

    return boto3.client("sqs", endpoint_url=server.endpoint, region_name="us-east-1",
                        aws_access_key_id=ACCESS_KEY, aws_secret_access_key=SECRET_KEY)


def notified_bucket(server: S3Server) -> tuple[str, str]:
    """A new bucket whose s3:ObjectCreated:* events go to a new queue: (bucket, queue url)."""
    name = f"landing-{uuid.uuid4().hex[:12]}"
    server.client().create_bucket(Bucket=name)
    queue = sqs(server).create_queue(QueueName=name)["QueueUrl"]
    arn = sqs(server).get_queue_attributes(
        QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    server.client().put_bucket_notification_configuration(
        Bucket=name, NotificationConfiguration={"QueueConfigurations": [
            {"QueueArn": arn, "Events": ["s3:ObjectCreated:*"]}]})
    return name, queue


def queued(server: S3Server, queue: str) -> tuple[int, int]:
    """(visible, received and not deleted) messages of the queue."""
    attributes = sqs(server).get_queue_attributes(QueueUrl=queue, AttributeNames=[
        "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"])["Attributes"]
    return (int(attributes["ApproximateNumberOfMessages"]),
            int(attributes["ApproximateNumberOfMessagesNotVisible"]))


def stream_config(name: str, queue: str | None, **discovery: Any) -> dict[str, Any]:
    config: dict[str, Any] = {"name": name, "globs": ["in/**"], "format": {"type": "jsonl"},
                              "objects_per_partition": 3}
    if queue is not None:
        config["discovery"] = {"mode": "notifications", "queue_url": queue, "wait_seconds": 0,
                               **discovery}
    return config


def without_messages(partitions: list[Partition]) -> list[tuple[str, dict[str, Any]]]:
    """Each partition's id and params, but its messages."""
    return [(p.id, {k: v for k, v in p.params.items() if k != "messages"}) for p in partitions]


KEYS = ["in/a b+c=1.jsonl", "in/day1/x.jsonl", "in/day1/y.jsonl", "in/z.jsonl"]


def put(server: S3Server, bucket: str, keys: list[str]) -> None:
    for n, key in enumerate(keys):
        server.client().put_object(Bucket=bucket, Key=key,
                                   Body=encode(ROWS[n * 3:n * 3 + 3], "jsonl"))


def test_messages_are_deleted_only_after_the_state_holding_their_objects_is_saved(
        s3_server: S3Server) -> None:
    bucket, queue = notified_bucket(s3_server)
    put(s3_server, bucket, [*KEYS, "other/not-this-stream.jsonl"])
    s3_server.client().delete_object(Bucket=bucket, Key="in/z.jsonl")  # gone before the plan
    source = ObjectStorageSource(s3_server.source_config(bucket, streams=[
        stream_config("notified", queue), stream_config("listed", None)]))
    notified = source.stream("notified")

    planned = notified.partitions(None)

    # the same partitions as a listing of the same objects, each with its keys' messages
    assert without_messages(planned) == without_messages(source.stream("listed").partitions(None))
    keys = [m[0] for p in planned for m in p.params.get("objects", [])]
    assert keys == KEYS[:3]  # decoded ("a+b%2Bc%3D1" is "a b+c=1"), in key order
    assert sorted(k for p in planned for k in p.params["messages"]) == KEYS[:3]
    # the test event, the other prefix's and the deleted object's messages are gone
    assert queued(s3_server, queue) == (0, 3)

    cursor = notified.cursor(None, incremental=True)
    for partition in planned:
        cursor.close_partition(partition)
    state = cursor.state()
    assert len(state["acks"]) == 3
    assert queued(s3_server, queue) == (0, 3)  # closing alone deletes nothing
    notified.on_state_committed(state)
    assert queued(s3_server, queue) == (0, 0)

    # the next plan reads only what was notified since
    put(s3_server, bucket, ["in/day2/new.jsonl"])
    again = notified.partitions(state)
    assert [p.params["key"] for p in again] == ["in/day2/new.jsonl"]


def test_messages_left_by_a_crash_come_back_and_are_skipped_as_read(s3_server: S3Server) -> None:
    bucket, queue = notified_bucket(s3_server)
    put(s3_server, bucket, KEYS)
    # a visibility timeout of 0: a message not deleted is received again at once
    config = s3_server.source_config(bucket, streams=[
        stream_config("notified", queue, visibility_timeout=0)])
    first = ObjectStorageSource(config).stream("notified")
    cursor = first.cursor(None, incremental=True)
    for partition in first.partitions(None):
        cursor.close_partition(partition)
    saved = cursor.state()
    assert queued(s3_server, queue)[0] + queued(s3_server, queue)[1] == 4  # crash: no delete

    # a new process plans from the saved state; a resumed run's state lists no acks
    state = {k: v for k, v in saved.items() if k != "acks"}
    after_crash = ObjectStorageSource(config).stream("notified")
    assert after_crash.partitions(state) == []
    assert queued(s3_server, queue) == (0, 0)


def test_a_plan_deletes_the_messages_its_saved_state_lists(s3_server: S3Server) -> None:
    """A crash between saving the state and deleting: the next plan deletes them first."""
    bucket, queue = notified_bucket(s3_server)
    put(s3_server, bucket, KEYS[:2])
    config = s3_server.source_config(bucket, streams=[stream_config("notified", queue)])
    first = ObjectStorageSource(config).stream("notified")
    cursor = first.cursor(None, incremental=True)
    for partition in first.partitions(None):
        cursor.close_partition(partition)
    assert queued(s3_server, queue) == (0, 2)

    assert ObjectStorageSource(config).stream("notified").partitions(cursor.state()) == []
    assert queued(s3_server, queue) == (0, 0)


def test_a_watch_poll_plans_before_the_run_and_the_run_still_sees_the_messages(
        s3_server: S3Server) -> None:
    """``--watch`` plans once to see if anything is new, then the run plans again: the
    messages the poll received are held by the stream, not hidden for a visibility timeout.
    An object written twice is read once, and both its messages are deleted."""
    bucket, queue = notified_bucket(s3_server)
    put(s3_server, bucket, KEYS[:2])
    put(s3_server, bucket, KEYS[:1])  # written again: a second event for the same key
    stream = ObjectStorageSource(s3_server.source_config(bucket, streams=[
        stream_config("notified", queue)])).stream("notified")
    poll = stream.partitions(None)
    planned = stream.partitions(None)
    assert planned == poll and len(planned) == 1
    assert {k: len(v) for k, v in planned[0].params["messages"].items()} == {
        KEYS[0]: 2, KEYS[1]: 1}
    cursor = stream.cursor(None, incremental=True)
    cursor.close_partition(planned[0])
    stream.on_state_committed(cursor.state())
    assert queued(s3_server, queue) == (0, 0)
    assert stream.partitions(cursor.state()) == []


def test_check_asks_the_queue(s3_server: S3Server) -> None:
    bucket, queue = notified_bucket(s3_server)
    ObjectStorageSource(s3_server.source_config(bucket, streams=[
        stream_config("notified", queue)])).check()
    missing = queue.rsplit("/", 1)[0] + "/no-such-queue"
    with pytest.raises(ConnectorError, match="no-such-queue") as refused:
        ObjectStorageSource(s3_server.source_config(bucket, streams=[
            stream_config("notified", missing)])).check()
    assert SECRET_KEY not in str(refused.value)


@pytest.mark.spark
def test_both_discovery_modes_sync_the_same_rows_then_only_new_objects(
        spark: Any, tmp_path: Path, s3_server: S3Server) -> None:
    bucket, queue = notified_bucket(s3_server)
    put(s3_server, bucket, KEYS)
    source = s3_server.source_config(bucket, streams=[
        stream_config("notified", queue), stream_config("listed", None)])
    path = connection(tmp_path, source, ["notified", "listed"])

    def table(stream: str) -> list[tuple[Any, ...]]:
        # the data, the source columns and the partition (the same plan): not the run's
        kept = ("_hw_partition_id", "_hw_notes")
        return sorted(tuple(str(v) for k, v in sorted(row.items())
                            if not k.startswith("_hw_") or k in kept)
                      for row in rows(spark, tmp_path, stream))

    first = run(path)
    assert first.status == "succeeded", first.to_dict()
    assert table("notified") == table("listed")
    assert len(table("notified")) == 12
    assert queued(s3_server, queue) == (0, 0)

    put(s3_server, bucket, ["in/day2/a.jsonl", "in/day0.jsonl"])  # one sorts below the others
    second = run(path)
    assert second.status == "succeeded", second.to_dict()
    assert {s.name: s.records_read for s in second.streams} == {"notified": 6, "listed": 6}
    assert table("notified") == table("listed")
    assert len(table("notified")) == 18
    assert queued(s3_server, queue) == (0, 0)


@pytest.mark.spark
def test_sigkill_mid_run_then_one_sync_lands_every_object_once_and_empties_the_queue(
        spark: Any, tmp_path: Path, s3_server: S3Server) -> None:
    bucket, queue = notified_bucket(s3_server)
    first_keys = [f"in/{n:02d}.jsonl" for n in range(6)]
    put(s3_server, bucket, first_keys)
    # a visibility timeout of 0: the messages the killed run received come back at once
    stream = {**stream_config("notified", queue, visibility_timeout=0),
              "objects_per_partition": 1}
    path = connection(tmp_path, s3_server.source_config(bucket, streams=[stream]),
                      ["notified"], name="crashy",
                      checkpoint={"partitions_per_checkpoint": 1, "concurrent_checkpoints": 1})
    killed = sync(tmp_path, path, env={"HEADWATER_FAULT": "after-release:3"})
    assert killed.exit_code == -signal.SIGKILL, killed.describe()
    assert len(store(tmp_path).get_state("crashy", "notified")["recent"]) == 3

    put(s3_server, bucket, ["in/new/a.jsonl", "in/new/b.jsonl"])
    result = sync_in_process(tmp_path, path)  # nothing killed: in this process
    assert result.exit_code == 0, result.describe()
    resumed, new = sync_runs(result)
    assert resumed["resumed"] is True and resumed["status"] == "succeeded"
    assert new["resumed"] is False and new["status"] == "succeeded"
    assert new["streams"][0]["records_written"] == 6  # the two new objects' rows only
    landed = sorted((r["_source_key"], r["_source_record"])
                    for r in rows(spark, tmp_path, "notified"))
    assert landed == sorted((key, n) for key in [*first_keys, "in/new/a.jsonl",
                                                 "in/new/b.jsonl"] for n in range(3))
    assert queued(s3_server, queue) == (0, 0)
