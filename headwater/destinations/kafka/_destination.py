"""The ``kafka`` destination: each stream a topic, exactly once for read_committed readers.

How a checkpoint lands (docs/destinations/kafka.md has the whole design):

1. The driver reads the markers topic (``_markers``): a checkpoint whose commit
   marker is there is done; units (source partitions) that tasks of an earlier
   attempt landed are handed to the tasks to skip.
2. The executors produce the rows (``_produce``), each unit in a Kafka
   transaction together with its task's marker, under a transactional.id stable
   across attempts, so a zombie is fenced and nothing lands twice.
3. The driver writes the checkpoint's commit marker (tag and counts) in a
   transaction of its own; only then does the engine release the state.

Rows never pass through the driver.  A checkpoint's units become visible to
read_committed consumers one by one, each whole; the state moves only after all
of them.  ``overwrite`` is refused: a topic cannot be replaced.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from headwater._events import commit_landed
from headwater.destinations._base import (
    CommitMarker,
    CommitResult,
    Destination,
    DestinationCapabilities,
)
from headwater.destinations.kafka import _config, _markers, _records, _topics
from headwater.destinations.kafka._client import TIMEOUT_S, describe, producer_settings
from headwater.destinations.kafka._produce import RESULT_DDL, ProduceTask
from headwater.errors import (
    CommitOutcomeUnknownError,
    ConfigError,
    DestinationError,
    HeadwaterError,
    NoTableError,
)
from headwater.sync_modes import DestinationSyncMode
from headwater.table_schema import META_NAMES

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from headwater.plan import CheckpointPlan, StreamPlan

#: The column that carries a source's own state on Spark Connect (the engine's
#: ``_task.STATE_COLUMN``, which a destination may not import): never a value field.
STATE_COLUMN = "_hw_partition_state"
#: Key buckets of an ``append_dedup`` checkpoint at most (one transaction each).
MAX_BUCKETS = 64


class KafkaDestination(Destination):
    type_name = "kafka"
    guarantee = "exactly-once (for read_committed consumers)"
    capabilities = DestinationCapabilities(
        sync_modes=("append", "append_dedup"),
        # A compacted topic keeps the last record of a key: an append_dedup stream's
        # checkpoints must land in their order.
        max_concurrent_commits={"append_dedup": 1},
        clusters_tables=False,
        partitions_tables=False,
        keeps_table_properties=False,
        # A deleted key's record is a tombstone (compaction removes the key): never soft.
        deletes=("hard",),
        commit_id="marker_offset",
    )

    def __init__(self, config: Mapping[str, Any]) -> None:
        super().__init__(config)
        self.settings = _config.KafkaSettings.from_config(self.config)
        self._connection = ""
        self._namespace_of: Callable[[str], str | None] = lambda _: None
        self._knows_namespaces = False

    @classmethod
    def spec(cls) -> dict[str, Any]:
        return _config.spec()

    def use_connection(self, name: str,
                       namespace_of: Callable[[str], str | None] | None = None) -> None:
        self._connection = name
        self._knows_namespaces = namespace_of is not None
        if namespace_of is not None:
            self._namespace_of = namespace_of

    # ------------------------------------------------------------------ where

    def topic(self, stream: str) -> str:
        """The stream's topic (the ``topic`` template filled in)."""
        return self.settings.topic_of(stream, connection=self._connection,
                                      namespace=self._namespace_of(stream))

    def table_location(self, stream: str) -> str:
        return self.topic(stream)

    def dataset_namespace(self) -> str:
        return self.settings.namespace()

    def read_table(self, spark: SparkSession, stream: str,
                   columns: Sequence[str] | None = None) -> DataFrame:
        """Refused: a topic is a log of every record sent, not the rows as they are now.

        Counting a window's committed records (``read_committed``) would count every
        version of a row the topic carries (an update is one more record, a delete a
        tombstone): a log's length, not the rows the source holds now, so ``headwater
        verify`` says it cannot verify such a stream.
        """
        raise NoTableError(f"the kafka destination keeps no table: topic "
                           f"{self.topic(stream)} is a log of records, not the rows as they "
                           "are now", stream=stream)

    def dataset_name(self, stream: str, namespace: str) -> str:
        return self.topic(stream)

    # ------------------------------------------------------------------ check

    def check(self) -> None:
        from headwater.destinations.kafka._check import check_cluster

        check_cluster(self.settings, [self.settings.markers_topic])

    def check_tables(self, streams: Mapping[str, pa.Schema]) -> None:
        from headwater.destinations.kafka._check import check_cluster

        # A {namespace} template is checked where the namespaces are known: in the sync.
        if "{namespace}" in self.settings.topic and not self._knows_namespaces:
            return
        check_cluster(self.settings, [self.topic(s) for s in streams])

    # ------------------------------------------------------------------ the contract

    def prepare(self, spark: SparkSession, plan: StreamPlan, data_schema: pa.Schema) -> pa.Schema:
        stream = plan.stream
        mode = stream.destination_sync_mode
        if mode is DestinationSyncMode.OVERWRITE:
            raise DestinationError(
                f"the kafka destination cannot overwrite topic {self.topic(stream.name)}: a "
                "topic's records cannot be replaced. Use append (every sync adds its records) "
                "or append_dedup (a compacted topic keyed by the primary key)",
                stream=stream.name)
        if mode is DestinationSyncMode.HISTORY:
            raise ConfigError(
                f"stream {stream.name!r} ({stream.mode_label}): the kafka destination cannot "
                "keep history: closing a version changes a record already produced, and a "
                "topic's records are never changed. Use append (every version is a record, "
                "in cursor order per key) or append_dedup (a compacted topic keyed by the "
                "primary key)", stream=stream.name, field="destination.type")
        if mode is DestinationSyncMode.APPEND_DEDUP and not stream.primary_key:
            raise DestinationError("append_dedup needs a primary key: it is the records' key "
                                   "in the compacted topic", stream=stream.name)
        compacted = mode is DestinationSyncMode.APPEND_DEDUP
        _topics.ensure(self.settings, {
            self.topic(stream.name): _topics.stream_topic_config(self.settings,
                                                                 compacted=compacted),
            self.settings.markers_topic: _topics.MARKERS_CONFIG,
        }, partitions={self.settings.markers_topic: 1})
        return data_schema

    def find_commit(self, spark: SparkSession, plan: StreamPlan,
                    marker: CommitMarker) -> CommitResult | None:
        markers = _markers.read_markers(self.settings, _markers.commit_key(marker.app_id))
        return _markers.find_commit(markers, marker)

    def commit(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
               rows: DataFrame, marker: CommitMarker) -> CommitResult:
        frame = self._prepared(rows, plan, checkpoint)
        topic = self.topic(plan.stream.name)
        tasks = frame.rdd.getNumPartitions()
        # Any attempt's task count is at most the checkpoint's partitions (one task per
        # partition at most; dedup buckets no more): the ids an earlier split may have used.
        every_split = max(tasks, len(checkpoint.partitions))
        try:
            if _markers.open_transactions(self.settings):
                # Perhaps a killed attempt's task, between its marker and its commit: fence
                # the lane's tasks, so the markers can be read to their end (read_markers).
                _markers.fence(self.settings, [_markers.transactional_id(marker.app_id, task)
                                               for task in range(every_split)])
            elif marker.attempt > 1 and every_split > tasks:
                # A later attempt with fewer tasks (fewer task slots than the killed one had):
                # this attempt's tasks fence their own ids as they start, not the killed
                # attempt's others, whose open transaction (records of a unit this attempt
                # produces too) would otherwise commit later, beside this one's.
                _markers.fence(self.settings, [_markers.transactional_id(marker.app_id, task)
                                               for task in range(tasks, every_split)])
            markers = _markers.read_markers(self.settings, _markers.commit_key(marker.app_id),
                                             _markers.task_prefix(marker.app_id))
        except HeadwaterError as exc:
            # An earlier attempt's records may have landed: no answer is no "nothing landed".
            raise CommitOutcomeUnknownError(
                f"the commit of checkpoint {marker.checkpoint_index} to topic {topic}",
                error="reading the commit markers first", lookup=str(exc),
                stream=marker.stream, checkpoint=marker.checkpoint_index) from exc
        found = _markers.find_commit(markers, marker)
        if found is not None:
            return found
        landed = _markers.landed_units(markers, marker)
        task = ProduceTask(self.settings, topic, marker, frozenset(landed))
        try:
            frame.mapInArrow(task, RESULT_DDL).collect()
        except Exception as exc:
            raise self._failed(marker, topic, "producing", exc) from exc
        try:
            landed = _markers.landed_units(
                _markers.read_markers(self.settings, _markers.task_prefix(marker.app_id)), marker)
            value, total = _markers.commit_value(
                markers.get(_markers.commit_key(marker.app_id)), marker, landed)
            offset = self._write_commit_marker(marker, value)
        except HeadwaterError as exc:
            raise self._failed(marker, topic, "writing the commit marker", exc) from exc
        commit_landed()
        return CommitResult(rows=total.rows, rejected=total.rejected, bytes=total.bytes,
                            version=offset, writer=_markers.WRITER,
                            writer_reason="records produced by the tasks in Kafka transactions")

    def abort(self, spark: SparkSession, plan: StreamPlan, checkpoint: CheckpointPlan,
              marker: CommitMarker) -> None:
        """Nothing to drop: a task's unfinished transaction is aborted by the task, by the
        next ``init_transactions`` of its transactional.id, or by the broker after
        ``transaction.timeout.ms``; read_committed consumers never see its records."""
        return None

    # ------------------------------------------------------------------ helpers

    def _prepared(self, rows: DataFrame, plan: StreamPlan,
                  checkpoint: CheckpointPlan) -> DataFrame:
        """The rows as the tasks produce them; an ``append_dedup`` checkpoint keeps the
        latest row of each key (the Delta destination's rule) in key buckets."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        stream = plan.stream
        data = [c for c in rows.columns if c not in META_NAMES and c != STATE_COLUMN]
        dedup = stream.destination_sync_mode is DestinationSyncMode.APPEND_DEDUP
        if not dedup:
            return _records.prepare(rows, data, stream.primary_key, tombstones=False)
        keys = [F.col(f"`{k}`") for k in stream.primary_key]
        record = F.substring_index(F.col("_hw_raw_id"), "-", -1).cast("long")
        order = ([F.col(f"`{stream.cursor_field}`").desc_nulls_last()]
                 if stream.cursor_field else [])
        order += [F.col("_hw_partition_id").desc(), record.desc()]
        latest = rows.withColumn("_hw_rank", F.row_number().over(
            Window.partitionBy(*keys).orderBy(*order))).where("_hw_rank = 1").drop("_hw_rank")
        buckets = max(1, min(MAX_BUCKETS, len(checkpoint.partitions)))
        bucketed = latest.repartition(buckets, *keys)
        unit = F.concat(F.lit("bucket-"), F.spark_partition_id().cast("string"),
                        F.lit(f"/{buckets}"))
        return _records.prepare(bucketed, data, stream.primary_key, tombstones=True, unit=unit)

    def _write_commit_marker(self, marker: CommitMarker, value: bytes) -> int | None:
        """The lane's commit marker, in a transaction of the driver's; its offset."""
        from confluent_kafka import KafkaException, Producer

        errors: list[Any] = []
        offsets: list[int | None] = []
        producer = Producer({**producer_settings(
            self.settings, _markers.transactional_id(marker.app_id, None)),
            "error_cb": errors.append})
        try:
            producer.init_transactions(TIMEOUT_S * 4)
            producer.begin_transaction()
            producer.produce(self.settings.markers_topic, key=_markers.commit_key(marker.app_id),
                             value=value, on_delivery=lambda e, m: offsets.append(m.offset())
                             if e is None else None)
            producer.commit_transaction(TIMEOUT_S * 4)
        except KafkaException as exc:
            raise describe(exc, self.settings, "writing the commit marker", errors,
                           stream=marker.stream) from exc
        return offsets[0] if offsets else None

    def _failed(self, marker: CommitMarker, topic: str, doing: str,
                exc: BaseException) -> BaseException:
        """A commit that failed: unknown (the run stays resumable) if any of it landed."""
        what = f"the commit of checkpoint {marker.checkpoint_index} to topic {topic}"
        try:
            landed = _markers.landed_units(
                _markers.read_markers(self.settings, _markers.task_prefix(marker.app_id)), marker)
        except HeadwaterError as lookup:
            return CommitOutcomeUnknownError(what, error=f"{doing}: {exc}", lookup=str(lookup),
                                             stream=marker.stream,
                                             checkpoint=marker.checkpoint_index)
        if landed:
            return CommitOutcomeUnknownError(
                what + f" (records of {len(landed)} of its partitions landed)",
                error=f"{doing}: {exc}", lookup=None, stream=marker.stream,
                checkpoint=marker.checkpoint_index)
        if isinstance(exc, HeadwaterError):
            return exc
        return DestinationError(f"{what} failed while {doing}: {exc}", stream=marker.stream,
                                checkpoint=marker.checkpoint_index)


__all__ = ["KafkaDestination"]
