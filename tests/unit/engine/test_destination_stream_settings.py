"""A stream setting the connection file accepts but its destination cannot honour is
refused, naming the field, before anything runs; never accepted and ignored.

``table_properties`` on a PostgreSQL table, a Kafka topic or a folder of files,
``partition_by`` there, and ``deletes: soft`` on Kafka (where a deleted key is a
tombstone, which compaction removes the key's records with) were accepted by
``validate`` and ``sync`` and then did nothing (or, for Kafka's ``partition_by``
and ``table_properties``, nothing at all, even in the sync).  ``resolve_streams``
is the refusal of ``sync``, ``plan`` and ``check``; ``validate`` of a source whose
streams are known only when it connects refuses the same through the destination's
capabilities alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from headwater.cli.app import app
from headwater.config import ConnectionConfig
from headwater.connectors.sample import SampleSource
from headwater.engine.connection import resolve_streams
from headwater.errors import ConfigError

DEDUP = {"name": "users", "sync_mode": "incremental", "destination_sync_mode": "append_dedup"}
APPEND = {"name": "users", "sync_mode": "incremental"}

#: id -> (destination, stream, the refused setting, what the refusal says)
IGNORED: dict[str, tuple[str, dict[str, Any], str, str]] = {
    "postgres-table-properties": (
        "postgres", {**APPEND, "table_properties": {"fillfactor": 70}}, "table_properties",
        "the postgres destination's tables keep no properties, so fillfactor would be set "
        "nowhere"),
    "kafka-table-properties": (
        "kafka", {**APPEND, "table_properties": {"retention.ms": 1000}}, "table_properties",
        "the kafka destination's tables keep no properties, so retention.ms"),
    "files-table-properties": (
        "files", {**APPEND, "table_properties": {"owner": "me"}}, "table_properties",
        "the files destination's tables keep no properties"),
    "kafka-partition-by": (
        "kafka", {**APPEND, "partition_by": ["country"]}, "partition_by",
        "partition_by: the kafka destination's tables have no partitions by column"),
    "postgres-partition-by": (
        "postgres", {**APPEND, "partition_by": ["country"]}, "partition_by",
        "partition_by: the postgres destination's tables have no partitions by column"),
    "files-partition-by": (
        "files", {**APPEND, "partition_by": ["country"]}, "partition_by",
        "partition_by: the files destination's tables have no partitions by column"),
    "kafka-soft-deletes": (
        "kafka", {**DEDUP, "deletes": "soft"}, "deletes",
        "deletes: soft: the kafka destination takes deletes: hard only"),
}


def _connection(destination: str, stream: dict[str, Any]) -> ConnectionConfig:
    return ConnectionConfig.model_validate({
        "name": "promises", "source": {"type": "sample", "config": {"users": 10}},
        "destination": {"type": destination}, "streams": [stream]})


@pytest.mark.parametrize(("destination", "stream", "setting", "message"),
                         list(IGNORED.values()), ids=list(IGNORED))
def test_a_setting_the_destination_would_ignore_is_refused_before_the_sync(
        destination: str, stream: dict[str, Any], setting: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        resolve_streams(SampleSource({"users": 10}), _connection(destination, stream))
    assert info.value.context["field"] == f"streams[0].{setting}"
    assert info.value.message.startswith("stream 'users': ")
    assert message in info.value.message


@pytest.mark.parametrize(("destination", "stream", "setting", "message"),
                         list(IGNORED.values()), ids=list(IGNORED))
def test_validate_refuses_it_without_reaching_the_source(
        tmp_path: Path, destination: str, stream: dict[str, Any], setting: str,
        message: str) -> None:
    # The postgres source's streams are known only by connecting (offline_catalog
    # "spec"): validate reaches nothing, so only the destination's capabilities refuse.
    path = tmp_path / "promises.yaml"
    path.write_text(yaml.safe_dump({
        "source": {"type": "postgres", "config": {"host": "127.0.0.1", "port": 1,
                                                  "database": "shop", "username": "loader"}},
        "destination": {"type": destination}, "streams": [stream]}))
    result = CliRunner().invoke(app, ["validate", str(path), "--json"])
    problems = json.loads(result.stdout)["problems"]
    refused = [p for p in problems if p["field"] == f"streams[0].{setting}"]
    assert refused and message in refused[0]["message"], problems
    assert result.exit_code == 2


@pytest.mark.parametrize(("destination", "deletes"), [
    ("kafka", "hard"), ("delta", "soft"), ("iceberg", "soft"), ("postgres", "soft")])
def test_a_stream_that_says_nothing_of_deletes_gets_what_its_destination_does(
        destination: str, deletes: str) -> None:
    # Kafka tombstones a deleted key whatever the plan says: the plan says so too.
    [configured] = resolve_streams(SampleSource({"users": 10}), _connection(destination, DEDUP))
    assert configured.deletes == deletes


@pytest.mark.parametrize("destination", ["delta", "iceberg"])
def test_the_destinations_that_honour_the_settings_still_take_them(destination: str) -> None:
    stream = {**DEDUP, "deletes": "soft", "partition_by": ["country"],
              "table_properties": {"owner": "me"}}
    [configured] = resolve_streams(SampleSource({"users": 10}),
                                   _connection(destination, stream))
    assert configured.table_layout.partition_by == ("country",)
    assert configured.table_layout.properties == {"owner": "me"}
    assert configured.deletes == "soft"
