"""A real SIGKILL of ``headwater sync`` into Kafka, checked from outside Headwater.

Two CLI processes, no more: the first is killed while it reads and produces (after a
unit of its second checkpoint landed, before the checkpoint's commit marker); the
second resumes the run and kills itself after its first commit, before that state is
saved.  The test process resumes the rest in process.  Then Kafka's own Java console
consumer (another client library than Headwater's librdkafka), read_committed, counts
the records per key: every source row once, none twice.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from headwater.connectors.sample import SampleSource
from tests.integration._cli import FAULT, READING_PAUSE, kill_cli, run_cli, start_cli
from tests.integration._connections import connection_file
from tests.integration._in_process import sync_in_process
from tests.integration.destinations.kafka._topic import read_topic

pytestmark = pytest.mark.spark

#: 8 partitions of 10 rows, 4 to a checkpoint: each of a checkpoint's 2 tasks reads 2
#: partitions, so one lands in its transaction while the next is still being read.
SOURCE = {"seed": 3, "users": 10, "orders": 80, "rows_per_partition": 10}
STREAM = {"name": "orders", "sync_mode": "incremental", "destination_sync_mode": "append",
          "cursor_field": "updated_at"}


def _console_keys(broker: Any, topic: str) -> Counter[str]:
    """Keys of every record a read_committed Java console consumer sees, counted."""
    done = broker.run_tool(
        "org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server",
        broker.bootstrap, "--topic", topic, "--from-beginning", "--isolation-level",
        "read_committed", "--property", "print.key=true", "--property", "print.value=false",
        "--timeout-ms", "4000")
    # The tool logs to stdout too (its timeout at the end): keys are the JSON lines.
    keys = [line.strip() for line in done.stdout.splitlines() if line.startswith("{")]
    assert keys, done.stderr[-3000:]
    return Counter(keys)


def test_killed_while_producing_then_after_a_commit_lands_every_row_once(
        spark: Any, tmp_path: Path, kafka_broker: Any) -> None:
    prefix = kafka_broker.topic_prefix()
    topic = prefix + "orders"
    path = connection_file(
        tmp_path, name="killed", source=SOURCE, streams=[STREAM],
        checkpoint={"partitions_per_checkpoint": 4},
        destination={"type": "kafka", "config": {
            "bootstrap_servers": kafka_broker.bootstrap, "topic": prefix + "{stream}",
            "markers_topic": prefix + "commits"}})

    # 1. Killed while reading: once a unit of the second checkpoint is visible, the
    #    other units of that checkpoint are still being read (a pause before each).
    process = start_cli(tmp_path, "sync", str(path), "--json", env=READING_PAUSE)
    deadline = time.monotonic() + 240
    while len(read_topic(kafka_broker.bootstrap, topic)) <= 40:
        assert process.poll() is None, "the sync ended before it could be killed"
        assert time.monotonic() < deadline, "nothing of the second checkpoint landed"
        time.sleep(0.2)
    killed = kill_cli(process)
    assert killed.exit_code == -9, killed.describe()
    landed_before = len(read_topic(kafka_broker.bootstrap, topic))
    assert 40 < landed_before < 80, landed_before

    # 2. Resumed, and killed after its first commit, before that state is saved.
    second = run_cli(tmp_path, "sync", str(path), "--json", env={FAULT: "after-commit:1"})
    assert second.exit_code == -9, second.describe()

    # 3. Resumed in process to the end.
    third = sync_in_process(tmp_path, path)
    assert third.exit_code == 0, third.describe()

    expected = SampleSource(SOURCE).expected_rows("orders").column("id").to_pylist()
    assert _console_keys(kafka_broker, topic) == Counter(f'{{"id":{i}}}' for i in expected)
