"""The tasks' progress channel without Spark: real datagrams on loopback, a real store.

What a task sends (:class:`PartitionProgress`) reaches the run's listener
(:class:`LiveProgress`), which keeps the newest count per partition and writes it to
``run_progress``; a stranger's datagram, an older attempt's and a late one of an ended
checkpoint are not taken; ``/metrics`` sums the running runs' figures.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from headwater.engine._live_progress import LiveProgress
from headwater.metadata_store import MetadataStore
from headwater.observability.metrics import render_metrics


@pytest.fixture
def store(tmp_path: Path) -> MetadataStore:
    return MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}")


@pytest.fixture
def live(store: MetadataStore) -> Iterator[LiveProgress]:
    run_id = store.create_run("c", plan={"connection": "c", "streams": []}, state_before={},
                              config_redacted={})
    listener = LiveProgress(store, run_id, host="127.0.0.1", bind="127.0.0.1",
                            interval_s=0.05)
    listener.start()
    try:
        yield listener
    finally:
        listener.close()


def _until(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not check():
        assert time.monotonic() < deadline, "not seen in 10 s"
        time.sleep(0.02)


def _records(store: MetadataStore, run_id: str) -> dict[tuple[str, int, str], int]:
    return {(f.stream, f.checkpoint_index, f.partition_id): f.records
            for f in store.live_figures(run_id)}


def test_a_partitions_count_reaches_the_store_while_it_is_read_and_leaves_at_the_commit(
        store: MetadataStore, live: LiveProgress) -> None:
    address = live.address("users", 7)
    read = 0
    with address.reporting("p-1", attempt=1) as progress:
        progress.count = lambda: read
        read = 120
        _until(lambda: _records(store, live.run_id) == {("users", 7, "p-1"): 120})
        read = 250  # moves while the partition is read
        _until(lambda: _records(store, live.run_id) == {("users", 7, "p-1"): 250})
        read = 300
    # The partition is read: its last count stays until its checkpoint ends.
    _until(lambda: _records(store, live.run_id) == {("users", 7, "p-1"): 300})
    metrics = render_metrics(store).decode()
    assert 'headwater_records_reading{connection="c",stream="users"} 300.0' in metrics
    assert 'headwater_partitions_reading{connection="c",stream="users"} 1.0' in metrics

    live.checkpoint_ended("users", 7)  # committed: gone at once, not at the next interval
    assert _records(store, live.run_id) == {}
    with address.reporting("p-1", attempt=1) as late:  # a datagram that arrives after
        late.count = lambda: 999
    time.sleep(0.3)
    assert _records(store, live.run_id) == {}


def test_strangers_older_attempts_and_overtaken_datagrams_are_not_taken(
        store: MetadataStore, live: LiveProgress) -> None:
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)

    def send(**message: object) -> None:
        sender.sendto(json.dumps({"t": live.token, "s": "users", "c": 1, "p": "p",
                                  **message}).encode(), ("127.0.0.1", live.port))

    send(a=2, n=50)  # a retried task's attempt
    _until(lambda: _records(store, live.run_id) == {("users", 1, "p"): 50})
    send(a=1, n=900)  # the failed attempt's, late
    send(a=2, n=40)  # overtaken by the datagram of 50
    send(t="not-the-token", a=3, n=7000)
    sender.sendto(b"not json", ("127.0.0.1", live.port))
    send(a=2, n=60)
    _until(lambda: _records(store, live.run_id) == {("users", 1, "p"): 60})
    sender.close()


def test_the_run_ending_drops_its_live_figures_and_a_finished_run_has_none_in_metrics(
        store: MetadataStore, live: LiveProgress) -> None:
    with live.address("orders", 3).reporting("p-9", attempt=1) as progress:
        progress.count = lambda: 10
    _until(lambda: bool(_records(store, live.run_id)))
    store.finish_run(live.run_id, status="failed", stats={}, state_after={}, error="x")
    assert "headwater_records_reading{" not in render_metrics(store).decode()  # not running
    live.close()
    assert store.live_figures(live.run_id) == []


def test_a_task_that_cannot_reach_the_driver_reads_on(store: MetadataStore) -> None:
    from headwater.engine._live_progress import ProgressAddress

    nowhere = ProgressAddress("no-such-host.invalid", 9, "t", "users", 1, 0.01)
    with nowhere.reporting("p", attempt=1) as progress:
        progress.count = lambda: 5
        time.sleep(0.05)


def test_what_a_partition_reports_counts_each_record_once() -> None:
    """The count a task reports is the rows its reader turned into batches plus those it
    holds: a batch's rows used to stay held until Spark took the batch (and the last
    batch's for good), so the last report of a partition of 40 records said 80."""
    import pyarrow as pa

    from headwater.engine._live_progress import ProgressAddress
    from headwater.engine._task import TaskContext, read_partition
    from headwater.sdk import Partition, Stream

    class Rows(Stream):
        name = "rows"

        def json_schema(self) -> dict[str, object]:
            return {"type": "object", "properties": {"id": {"type": "integer"}}}

        def partitions(self, state: object) -> list[Partition]:
            return [Partition("rows", "p", {})]

        def read(self, partition: Partition) -> Iterator[object]:
            yield from ({"id": n} for n in range(25))
            yield pa.RecordBatch.from_pydict({"id": list(range(10))})
            yield from ({"id": n} for n in range(5))

    context = TaskContext(run_id="r", checkpoint_index=1,
                          data_schema=pa.schema([pa.field("id", pa.int64())]))
    progress = ProgressAddress("127.0.0.1", 9, "t", "rows", 1).reporting("p", attempt=1)
    reading = read_partition(Rows(), Partition("rows", "p", {}), context, progress=progress)
    counts = []
    for batch in reading:
        counts.append((batch.num_rows, progress.count()))
    assert counts == [(25, 25), (10, 35), (5, 40)]
    assert progress.count() == 40
