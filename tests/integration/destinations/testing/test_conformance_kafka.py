"""The destination kit's conformance run against Kafka (a real broker), in process on the
shared Spark session, read back by a read_committed consumer of the test's own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from headwater.connectors.sample import SampleSource
from headwater.destinations import Destination
from headwater.destinations.kafka import KafkaDestination
from headwater.destinations.testing import assert_conformant
from headwater.destinations.testing._conformance import SOURCE
from tests.integration.destinations.kafka._topic import rows_of

pytestmark = pytest.mark.spark


def test_kafka_keeps_the_destination_contract(spark: Any, tmp_path: Path,
                                              kafka_broker: Any) -> None:
    prefix = kafka_broker.topic_prefix()

    def make(folder: Path) -> KafkaDestination:
        # One topic per case (the case's folder), one markers topic for the whole run.
        return KafkaDestination({"bootstrap_servers": kafka_broker.bootstrap,
                                 "topic": f"{prefix}{folder.parent.name}.{{stream}}",
                                 "markers_topic": f"{prefix}commits", "partitions": 2})

    def read(destination: Destination, stream: str) -> pa.Table:
        schema = SampleSource(dict(SOURCE)).expected_rows(stream).schema
        return rows_of(kafka_broker.bootstrap, destination.table_location(stream), schema)

    assert_conformant(make, spark, tmp_path, read_rows=read)
