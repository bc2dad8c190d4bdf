"""Commit markers in the Kafka cluster itself: what landed, answered by the cluster.

Why in Kafka and not in the metadata store: a store restored from an older
backup forgets commits the topics hold, so the answer to "did this land?" must
come from where the records are (as Kafka Connect keeps source offsets in a
compacted topic).  The markers topic is compacted, and every marker is keyed so
that the *latest* record of a key is the whole answer, and the number of keys
stays bounded (one per commit lane, one per lane and task):

``commit/<app_id>``
    written by the driver, in a transaction, once a checkpoint's tasks are done:
    the lane's latest version and its last :data:`KEPT_COMMITS` commits, each with
    the checkpoint's tag (run, stream, index, partition states) and counts.
``task/<app_id>/<task>``
    written by a task, in the same transaction as the records of each *unit* it
    produced (a source partition; for ``append_dedup`` a key bucket): the version
    and run it worked for and every unit of that version it has landed, with counts.

``app_id`` is the engine's commit lane (store, connection, stream, lane);
checkpoint versions only grow within a lane, and a lane commits its
checkpoints one after the other.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from headwater.destinations._base import (
    CommitMarker,
    CommitResult,
    tagged_counts,
    tagged_partition_states,
)
from headwater.destinations.kafka._client import (
    TIMEOUT_S,
    describe,
    producer_settings,
    reader_settings,
)
from headwater.errors import DestinationError, StoreBehindTableError

if TYPE_CHECKING:
    from headwater.destinations.kafka._config import KafkaSettings

#: Commits of a lane its marker keeps, figures and tag included (older ones are known
#: only as "landed": the engine then takes their figures from the metadata store).
KEPT_COMMITS = 32
#: How long a read of the markers waits for a transaction open on them to end.
OPEN_TRANSACTION_WAIT_S = 120.0
#: What ``CommitResult.writer`` says of a Kafka commit.
WRITER = "tasks+kafka-transactions"

#: Latest value of each marker key (None: no marker).
Markers = Mapping[str, "dict[str, Any]"]


def commit_key(app_id: str) -> str:
    """The key of a lane's commit marker."""
    return f"commit/{app_id}"


def task_key(app_id: str, task: int) -> str:
    """The key of a lane's task marker (``task`` is the Spark partition of the commit)."""
    return f"task/{app_id}/{task}"


def transactional_id(app_id: str, task: int | None) -> str:
    """The transactional.id of a task (None: the driver's commit marker) of a lane.

    Stable across attempts of the same lane and task: a new attempt's
    ``init_transactions`` fences a zombie of an earlier one and aborts its open
    transaction.
    """
    return f"{app_id}/commit" if task is None else f"{app_id}/task-{task}"


@dataclass(frozen=True)
class Unit:
    """One unit's figures: records, records with notes, value bytes."""

    rows: int = 0
    rejected: int = 0
    bytes: int = 0

    def to_dict(self) -> dict[str, int]:
        return {"rows": self.rows, "rejected": self.rejected, "bytes": self.bytes}


def task_value(marker: CommitMarker, units: Mapping[str, Unit]) -> bytes:
    """A task marker: the version and run it is for, every unit of them it landed."""
    return _json({"version": marker.version, "run_id": marker.run_id,
                  "units": {unit: figures.to_dict() for unit, figures in sorted(units.items())}})


def landed_units(markers: Markers, marker: CommitMarker, task: int | None = None,
                 ) -> dict[str, Unit]:
    """The units of ``marker``'s checkpoint that tasks landed (of one ``task``, or all).

    A task marker of this lane at a later version, or at this version for another
    run, means the metadata store handed this checkpoint's version out again
    (restored from an older copy): :class:`StoreBehindTableError`, as Delta's
    destination does, before anything is produced.
    """
    landed: dict[str, Unit] = {}
    prefix = task_prefix(marker.app_id)
    for key, value in markers.items():
        if not key.startswith(prefix) or value is None:
            continue
        if task is not None and key != task_key(marker.app_id, task):
            continue
        version, run_id = int(value.get("version", -1)), str(value.get("run_id"))
        if version > marker.version or (version == marker.version and run_id != marker.run_id):
            raise _store_behind(marker, version, run_id)
        if version == marker.version:
            for unit, figures in dict(value.get("units") or {}).items():
                landed[str(unit)] = Unit(**{k: int(v) for k, v in figures.items()})
    return landed


def commit_value(previous: Mapping[str, Any] | None, marker: CommitMarker,
                 units: Mapping[str, Unit]) -> tuple[bytes, Unit]:
    """The lane's commit marker after ``marker``'s checkpoint, and the checkpoint's figures."""
    total = Unit(rows=sum(u.rows for u in units.values()),
                 rejected=sum(u.rejected for u in units.values()),
                 bytes=sum(u.bytes for u in units.values()))
    commits = [c for c in list((previous or {}).get("commits") or [])
               if int(c.get("version", -1)) != marker.version]
    commits.append({"version": marker.version, "run_id": marker.run_id,
                    "tag": marker.tag_with_counts(total.rows, total.rejected, total.bytes)})
    return _json({"version": marker.version, "commits": commits[-KEPT_COMMITS:]}), total


def find_commit(markers: Markers, marker: CommitMarker) -> CommitResult | None:
    """``marker``'s commit as the lane's commit marker tells it (None: it did not land).

    Its own entry gives its figures and states; a lane already past it without an
    entry (older than :data:`KEPT_COMMITS`) is a commit without figures on a resumed
    attempt, and on a first attempt a metadata store behind the cluster.
    """
    lane = markers.get(commit_key(marker.app_id))
    if lane is None:
        return None
    for entry in lane.get("commits") or []:
        if int(entry.get("version", -1)) != marker.version:
            continue
        if entry.get("run_id") != marker.run_id:
            raise _store_behind(marker, marker.version, str(entry.get("run_id")))
        counts = tagged_counts(entry.get("tag"))
        return CommitResult(rows=counts.get("rows", 0), rejected=counts.get("rejected", 0),
                            bytes=counts.get("bytes", 0), version=None, already_committed=True,
                            partition_states=tagged_partition_states(entry.get("tag")),
                            writer=WRITER, writer_reason="committed by an earlier attempt")
    held = int(lane.get("version", -1))
    if held < marker.version:
        return None
    if marker.attempt > 1:
        return CommitResult(rows=0, rejected=0, bytes=0, version=None, already_committed=True,
                            writer=WRITER, writer_reason="committed by an earlier attempt")
    raise _store_behind(marker, held, None)


def task_prefix(app_id: str) -> str:
    """What the keys of a lane's task markers start with."""
    return f"task/{app_id}/"


def read_markers(settings: KafkaSettings, *prefixes: str,
                 wait_s: float = OPEN_TRANSACTION_WAIT_S) -> dict[str, dict[str, Any]]:
    """The latest marker of every key starting with one of ``prefixes``, read committed.

    Reads the markers topic from its start to its **high watermark** taken first (a
    missing topic holds no markers).  Not to the end a read_committed consumer sees:
    that end is the last stable offset, which stops before the first transaction still
    open, so a marker committed after it would be missed.  Reading to the high
    watermark waits until every transaction open at the start has ended (a live one
    ends in milliseconds; a killed attempt's when its transactional.id is fenced:
    :func:`fence`); one still open after ``wait_s`` is an error, not a partial answer.
    """
    from confluent_kafka import (
        OFFSET_BEGINNING,
        Consumer,
        KafkaError,
        KafkaException,
        TopicPartition,
    )

    errors: list[Any] = []
    consumer = Consumer({**reader_settings(settings), "error_cb": errors.append})
    try:
        ends = high_watermarks(settings, consumer, errors)
        if not ends:
            return {}
        consumer.assign([TopicPartition(settings.markers_topic, p, OFFSET_BEGINNING)
                         for p in ends])
        pending = {p for p, end in ends.items() if end > 0}
        latest: dict[str, Any] = {}
        deadline = time.monotonic() + wait_s
        while pending:
            if time.monotonic() > deadline:
                raise DestinationError(
                    f"a transaction of an earlier attempt is still open on the markers topic "
                    f"{settings.markers_topic} after {wait_s:.0f} s (its producer was not fenced); "
                    "the broker aborts it after its transaction.timeout.ms: sync again then")
            message = consumer.poll(0.2)
            if message is not None:
                error = message.error()
                if error is None:
                    key = (message.key() or b"").decode()
                    if key.startswith(prefixes):
                        value = message.value()
                        latest[key] = json.loads(value) if value is not None else None
                elif error.code() != KafkaError._PARTITION_EOF:
                    raise describe(KafkaException(error), settings, "reading the commit markers")
            for position in consumer.position([TopicPartition(settings.markers_topic, p)
                                               for p in list(pending)]):
                if position.offset >= ends[position.partition]:
                    pending.discard(position.partition)
        return {k: v for k, v in latest.items() if v is not None}
    finally:
        consumer.close()


def high_watermarks(settings: KafkaSettings, consumer: Any, errors: list[Any]) -> dict[int, int]:
    """Each markers partition's high watermark (not its last stable offset, which a
    read_committed consumer is given): ``{}`` when the topic does not exist."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    try:
        topic = consumer.list_topics(settings.markers_topic, timeout=TIMEOUT_S)
    except KafkaException as exc:
        raise describe(exc, settings, "reading the commit markers", errors) from exc
    meta = topic.topics.get(settings.markers_topic)
    if meta is None or meta.error is not None:
        return {}
    uncommitted = Consumer({**reader_settings(settings), "isolation.level": "read_uncommitted"})
    try:
        return {p: watermarks(uncommitted, TopicPartition(settings.markers_topic, p))[1]
                for p in sorted(meta.partitions)}
    except KafkaException as exc:
        raise describe(exc, settings, "reading the commit markers", errors) from exc
    finally:
        uncommitted.close()


def watermarks(consumer: Any, partition: Any) -> tuple[int, int]:
    """A partition's low and high watermarks, asked again while the broker answers with an
    error Kafka calls retriable.

    Right after the markers topic is created, its partitions' leaders are not known to
    every broker yet: the first ask answered ``Not leader for partition`` and the commit
    was reported as of unknown outcome (CI saw it on a topic created a moment before).
    """
    from confluent_kafka import KafkaError, KafkaException

    # A partition whose leader is not known yet (a topic just created, a leader moving):
    # librdkafka does not always flag these retriable on a watermark query.
    leadership = {KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.LEADER_NOT_AVAILABLE,
                  KafkaError.NOT_LEADER_FOR_PARTITION}
    deadline = time.monotonic() + TIMEOUT_S
    while True:
        try:
            found: tuple[int, int] = consumer.get_watermark_offsets(
                partition, timeout=TIMEOUT_S, cached=False)
            return found
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            retriable = bool(getattr(error, "retriable", lambda: False)()) or (
                getattr(error, "code", lambda: None)() in leadership)
            if not retriable or time.monotonic() > deadline:
                raise
            time.sleep(_RETRY_S)


#: How long to wait before asking a broker again after a retriable error.
_RETRY_S = 0.2


def open_transactions(settings: KafkaSettings) -> bool:
    """Whether a transaction is open on the markers topic (its last stable offset is
    behind its high watermark somewhere)."""
    from confluent_kafka import Consumer, TopicPartition

    errors: list[Any] = []
    consumer = Consumer({**reader_settings(settings), "error_cb": errors.append})
    try:
        ends = high_watermarks(settings, consumer, errors)
        return any(watermarks(consumer, TopicPartition(settings.markers_topic, p))[1] < end
                   for p, end in ends.items())
    finally:
        consumer.close()


def fence(settings: KafkaSettings, transactional_ids: list[str]) -> None:
    """Fence each of ``transactional_ids``: a zombie's later produce or commit fails, and
    its open transaction is aborted (what a new attempt's ``init_transactions`` does)."""
    from concurrent.futures import ThreadPoolExecutor

    from confluent_kafka import Producer

    def one(transactional_id: str) -> None:
        producer = Producer(producer_settings(settings, transactional_id))
        producer.init_transactions(TIMEOUT_S * 4)

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(one, transactional_ids))


def _store_behind(marker: CommitMarker, held: int, run_id: str | None) -> StoreBehindTableError:
    by = f", written by run {run_id}" if run_id not in (None, marker.run_id) else ""
    return StoreBehindTableError(
        f"the metadata store is behind the Kafka cluster: checkpoint {marker.checkpoint_index} "
        f"of run {marker.run_id} got version {marker.version} of {marker.app_id}, and the "
        f"markers topic already holds version {held} of it{by}; nothing was produced. The "
        "store was restored from an older copy (or lost writes)", stream=marker.stream)


def _json(document: Mapping[str, Any]) -> bytes:
    return json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def marker_error(marker: CommitMarker, message: str) -> DestinationError:
    return DestinationError(message, stream=marker.stream, checkpoint=marker.checkpoint_index)


__all__ = ["KEPT_COMMITS", "WRITER", "Unit", "commit_key", "commit_value", "fence",
           "find_commit", "landed_units", "open_transactions", "read_markers", "task_key",
           "task_prefix", "task_value", "transactional_id"]
