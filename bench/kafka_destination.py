"""Rows into Kafka: a Headwater sync (exactly once) against Spark's own Kafka sink, and the
broker's own producer benchmark as the ceiling.

All three write the same rows to a fresh topic each, with the same partition count, on
the broker of ``scripts/kafka`` (started if it is not running):

* **Headwater**: ``SyncEngine.run()`` of the ``sample`` source's ``orders`` stream
  (full_refresh + append) into ``type: kafka``: each task produces its partitions' rows in
  Kafka transactions with their markers, the driver writes the commit markers (exactly
  once for read_committed consumers).  Its topic is then read back read_committed
  (outside the timed part): every row once.
* **Spark's Kafka sink** (``spark-sql-kafka-0-10_2.13`` 4.2.0, at least once): the stream's
  own reader under ``mapInArrow`` (the same data generation cost), then
  ``selectExpr("to_json(named_struct('id', id)) AS key", "to_json(struct(*)) AS value")
  .write.format("kafka")``, in the same session, the same run.
* **kafka-producer-perf-test** (``org.apache.kafka.tools.ProducerPerformance``): the same
  number of records of Headwater's average value size, from one Java producer with no
  data to make: the broker's ingest ceiling on this machine (with Kafka's default producer
  settings, and with Headwater's).

The session is warmed up first (one small job of each kind).  The sink's jars are fetched
as the engine fetches jars it cannot get from Ivy (``mvn dependency:copy``,
``headwater/engine/_jars.py``) into ``~/.cache/headwater/bench-spark-kafka-4.2.0``.

Run: ``.venv/bin/python bench/kafka_destination.py [--rows 2000000]``
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from _common import header, scratch_dir, stream_frame, table

from headwater.config import load_connection
from headwater.connectors.sample import SampleSource
from headwater.destinations.kafka._client import PRODUCER_DEFAULTS
from headwater.engine import SparkSettings, SyncEngine, SyncOptions, get_spark
from headwater.engine._jars import fetch_with_maven, missing_artifacts
from headwater.metadata_store import MetadataStore

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

REPO = Path(__file__).resolve().parent.parent
KAFKA = REPO / "scripts" / "kafka"
SINK_ARTIFACTS = ("org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0",
                  "org.apache.spark:spark-token-provider-kafka-0-10_2.13:4.2.0",
                  # spark-parent 4.2.0's kafka.version and commons-pool2.version
                  "org.apache.kafka:kafka-clients:3.9.2",
                  "org.apache.commons:commons-pool2:2.13.1")
SINK_JARS = Path.home() / ".cache" / "headwater" / "bench-spark-kafka-4.2.0"


def sink_jars() -> list[str]:
    missing = missing_artifacts(SINK_ARTIFACTS, SINK_JARS)
    if missing:
        fetch_with_maven(missing, SINK_JARS)
    return sorted(str(p) for p in SINK_JARS.glob("*.jar"))


def broker() -> str:
    done = subprocess.run([str(KAFKA), "start"], check=True, capture_output=True, text=True)
    return done.stdout.strip().splitlines()[-1]


def source_config(rows: int, rows_per_partition: int) -> dict[str, Any]:
    return {"seed": 42, "users": 1000, "orders": rows, "rows_per_partition": rows_per_partition}


def create_topic(bootstrap: str, name: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, num_partitions=partitions,
                                            replication_factor=1)])
    futures[name].result()


# --------------------------------------------------------------------- Spark's sink


def spark_sink(spark: SparkSession, bootstrap: str, topic: str, rows: int,
               rows_per_partition: int) -> float:
    stream = SampleSource(source_config(rows, rows_per_partition)).stream("orders")
    began = time.perf_counter()
    frame = stream_frame(spark, stream)
    (frame.selectExpr("to_json(named_struct('id', id)) AS key", "to_json(struct(*)) AS value")
     .write.format("kafka").option("kafka.bootstrap.servers", bootstrap)
     .option("topic", topic).save())
    return time.perf_counter() - began


# --------------------------------------------------------------------- Headwater


def headwater_sync(folder: Path, settings: SparkSettings, bootstrap: str, topic: str,
                   rows: int, rows_per_partition: int, producer: dict[str, str],
                   partitions: int) -> tuple[float, Any]:
    folder.mkdir(parents=True, exist_ok=True)
    document = {
        "name": "bench",
        "source": {"type": "sample", "config": source_config(rows, rows_per_partition)},
        "destination": {"type": "kafka", "config": {
            "bootstrap_servers": bootstrap, "topic": topic, "partitions": partitions,
            "markers_topic": f"{topic}-commits", "producer": producer}},
        "streams": [{"name": "orders", "sync_mode": "full_refresh",
                     "destination_sync_mode": "append"}],
        "metadata_store": f"sqlite:///{folder / 'headwater.db'}",
    }
    path = folder / "bench.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    connection = load_connection(path)
    store = MetadataStore(connection.metadata_store or "")
    began = time.perf_counter()
    result = SyncEngine(connection, store, SyncOptions(spark=settings)).run()
    seconds = time.perf_counter() - began
    store.close()
    if result.status != "succeeded":
        raise SystemExit(f"Headwater sync failed: {result.to_dict()}")
    return seconds, result.streams[0]


def committed_keys(bootstrap: str, topic: str) -> tuple[int, int]:
    """(records, distinct keys) a read_committed consumer sees in ``topic``."""
    from confluent_kafka import Consumer, KafkaError, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-check",
                         "isolation.level": "read_committed", "enable.partition.eof": True,
                         "enable.auto.commit": False})
    meta = consumer.list_topics(topic, timeout=10).topics[topic]
    consumer.assign([TopicPartition(topic, p, 0) for p in meta.partitions])
    pending, records, keys = set(meta.partitions), 0, set()
    while pending:
        for message in consumer.consume(10_000, timeout=10):
            error = message.error()
            if error is not None and error.code() == KafkaError._PARTITION_EOF:
                pending.discard(message.partition())
            elif error is None:
                records += 1
                keys.add(message.key())
    consumer.close()
    return records, len(keys)


# --------------------------------------------------------------------- the ceiling


def perf_test(bootstrap: str, topic: str, rows: int, size: int,
              props: dict[str, str]) -> tuple[float, str]:
    command = [str(KAFKA), "run", "org.apache.kafka.tools.ProducerPerformance", "--topic", topic,
               "--num-records", str(rows), "--record-size", str(size), "--throughput", "-1",
               "--producer-props", f"bootstrap.servers={bootstrap}",
               *[f"{k}={v}" for k, v in props.items()]]
    done = subprocess.run(command, check=True, capture_output=True, text=True)
    last = [line for line in done.stdout.splitlines() if "records sent" in line][-1]
    found = re.search(r"([\d.]+) records/sec", last)
    assert found is not None, last
    return float(found.group(1)), last


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--rows-per-partition", type=int, default=100_000)
    parser.add_argument("--topic-partitions", type=int, default=4)
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--producer", action="append", default=[],
                        help="KEY=VALUE librdkafka settings for Headwater's producer")
    args = parser.parse_args(argv)
    header("Headwater -> Kafka vs Spark's Kafka sink", [Path(sys.executable).name, *sys.argv])
    producer = dict(p.split("=", 1) for p in args.producer)
    bootstrap = broker()
    run = uuid.uuid4().hex[:8]
    topics = {name: f"bench-{run}-{name}" for name in
              ("warm-hw", "warm-spark", "headwater", "spark", "perf-default", "perf-tuned")}
    for name in ("warm-spark", "spark", "perf-default", "perf-tuned"):
        create_topic(bootstrap, topics[name], args.topic_partitions)
    with scratch_dir("hw-bench-kafka-") as scratch:
        settings = SparkSettings(master=args.master, app_name="headwater-bench",
                                 conf={"spark.jars": ",".join(sink_jars())},
                                 jvm_log_path=scratch / "spark.log")
        spark = get_spark(settings)
        print(f"Spark {spark.version}, master {args.master}, broker {bootstrap}, "
              f"{args.topic_partitions} partitions per topic", flush=True)
        print("warm-up (one small job of each kind)", flush=True)
        spark_sink(spark, bootstrap, topics["warm-spark"], 20_000, 10_000)
        headwater_sync(scratch / "warm", settings, bootstrap, topics["warm-hw"], 20_000, 10_000,
                       producer, args.topic_partitions)

        print("Spark's Kafka sink", flush=True)
        spark_s = spark_sink(spark, bootstrap, topics["spark"], args.rows,
                             args.rows_per_partition)
        print("Headwater", flush=True)
        headwater_s, stats = headwater_sync(scratch / "run", settings, bootstrap,
                                            topics["headwater"], args.rows,
                                            args.rows_per_partition, producer,
                                            args.topic_partitions)
        size = max(1, round(stats.bytes / max(stats.records_written, 1)))
        records, keys = committed_keys(bootstrap, topics["headwater"])
        print("kafka-producer-perf-test", flush=True)
        default_rate, default_line = perf_test(bootstrap, topics["perf-default"], args.rows,
                                               size, {})
        tuned = {k: v for k, v in {**PRODUCER_DEFAULTS, **producer}.items()
                 if k in ("linger.ms", "batch.size", "compression.type")}
        tuned_rate, tuned_line = perf_test(bootstrap, topics["perf-tuned"], args.rows, size,
                                           tuned)
    hw_rate, spark_rate = args.rows / headwater_s, args.rows / spark_s
    print()
    print(table(["writer", "seconds", "records/s", "Headwater / it"], [
        ["Headwater (exactly once)", f"{headwater_s:.2f}", f"{hw_rate:,.0f}", "1.00x"],
        ["Spark's Kafka sink (at least once)", f"{spark_s:.2f}", f"{spark_rate:,.0f}",
         f"{hw_rate / spark_rate:.2f}x"],
        ["perf-test, Kafka's producer defaults", f"{args.rows / default_rate:.2f}",
         f"{default_rate:,.0f}", f"{hw_rate / default_rate:.2f}x"],
        ["perf-test, " + ", ".join(f"{k}={v}" for k, v in tuned.items()),
         f"{args.rows / tuned_rate:.2f}", f"{tuned_rate:,.0f}", f"{hw_rate / tuned_rate:.2f}x"],
    ]))
    print(f"\nHeadwater: {stats.checkpoints} checkpoints, {stats.records_written:,} records, "
          f"average value {size} bytes; read back read_committed: {records:,} records, "
          f"{keys:,} distinct keys")
    print(f"perf-test (defaults): {default_line}\nperf-test (tuned): {tuned_line}")
    if records != args.rows or keys != args.rows:
        raise SystemExit("Headwater's topic does not hold every row exactly once")


if __name__ == "__main__":
    main()
