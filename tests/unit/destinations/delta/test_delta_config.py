"""The Delta destination's config (tables by name) and the streams' table layout settings."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest

from headwater.config import StreamConfig, load_connection
from headwater.connectors.sample import SampleSource
from headwater.destinations import build_destination
from headwater.destinations.delta import DeltaDestination
from headwater.destinations.delta._catalog import same_location
from headwater.engine.connection import resolve_streams
from headwater.errors import ConfigError, SpecValidationError
from headwater.plan import ConfiguredStream, TableLayout


def problems(config: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(SpecValidationError) as info:
        build_destination("delta", config)
    return dict(info.value.problems)


def test_tables_are_named_database_dot_prefix_and_stream() -> None:
    named = build_destination("delta", {"path": "/lake", "database": "raw",
                                        "table_prefix": "hw_"})
    assert named.table_name("users") == "raw.hw_users"
    assert named.table_location("users") == "/lake/users"  # the table stays at its path
    assert build_destination("delta", {"database": "raw"}).table_name("users") == "raw.users"
    assert build_destination("delta", {"path": "/lake"}).table_name("users") is None


def test_a_wrong_type_names_the_field() -> None:
    assert problems({"database": 7}) == {
        "destination.config.database": "expected string, got integer 7"}
    assert problems({"database": "raw", "table_prefix": ["hw_"]}) == {
        "destination.config.table_prefix": "expected string, got array"}


def test_names_a_catalog_would_have_to_quote_are_refused() -> None:
    found = problems({"database": "raw data", "table_prefix": "hw-"})
    assert set(found) == {"destination.config.database", "destination.config.table_prefix"}
    assert all("must match the pattern" in message for message in found.values())


def test_a_prefix_without_a_database_is_refused() -> None:
    assert problems({"table_prefix": "hw_"}) == {
        "destination.config.database": "required when 'table_prefix' is set"}


def test_the_spec_says_what_each_field_is_for() -> None:
    properties = DeltaDestination.spec()["properties"]
    assert {"path", "writer", "database", "table_prefix"} <= set(properties)
    assert all(p.get("description") for p in properties.values())


@pytest.mark.parametrize(("recorded", "location", "same"), [
    ("file:/lake/users", "/lake/users", True),
    ("file:///lake/users/", "/lake/users", True),
    ("file:/lake/users", "file:///lake/users", True),
    ("file:/lake/orders", "/lake/users", False),
    ("s3a://bucket/lake/users", "s3a://bucket/lake/users/", True),
    ("s3a://bucket/lake/users", "/lake/users", False),
])
def test_the_catalog_s_location_is_compared_as_a_path(recorded: str, location: str,
                                                      same: bool) -> None:
    assert same_location(recorded, location) is same


# ------------------------------------------------------------ the streams' table layout

def stream(**settings: Any) -> StreamConfig:
    return StreamConfig(name="users", **settings)


def test_a_stream_s_layout_is_read_with_properties_as_text() -> None:
    configured = stream(partition_by="country", table_properties={
        "delta.appendOnly": False, "delta.logRetentionDuration": "interval 7 days",
        "delta.checkpointInterval": 5})
    assert configured.partition_by == ["country"]
    assert configured.table_properties == {"delta.appendOnly": "false",
                                           "delta.logRetentionDuration": "interval 7 days",
                                           "delta.checkpointInterval": "5"}


@pytest.mark.parametrize(("settings", "message"), [
    ({"partition_by": ["country"], "cluster_by": ["id"]},
     "partition_by and cluster_by are mutually exclusive"),
    ({"partition_by": ["country", "country"]}, "partition_by lists country more than once"),
    ({"cluster_by": ["id", ""]}, "cluster_by holds an empty column name"),
    ({"table_properties": {" ": "x"}}, "table_properties holds an empty property name"),
    ({"table_properties": ["delta.appendOnly"]}, "valid dictionary"),
])
def test_a_layout_that_cannot_be_is_refused(settings: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        stream(**settings)


def test_layout_problems_name_the_field_and_line(tmp_path: Path) -> None:
    path = tmp_path / "conn.yaml"
    path.write_text(textwrap.dedent("""\
        source: {type: sample}
        streams:
          - name: users
            table_properties: {delta.appendOnly: [true]}
        """))
    with pytest.raises(SpecValidationError) as info:
        load_connection(path, env={})
    (field, message), = info.value.problems
    assert field == 'streams[0].table_properties["delta.appendOnly"]'
    assert "(line 4)" in message


def test_layout_columns_must_be_the_stream_s() -> None:
    source = SampleSource({"users": 10})
    connection = load_connection_with(source_streams=[
        {"name": "users", "partition_by": ["region"]}])
    with pytest.raises(ConfigError) as info:
        resolve_streams(source, connection)
    assert info.value.context["field"] == "streams[0].partition_by"
    assert "no column 'region'" in info.value.message
    # The metadata columns are the table's too.
    by_run = load_connection_with(source_streams=[
        {"name": "users", "partition_by": ["_hw_run_id"]}])
    assert resolve_streams(source, by_run)[0].table_layout.partition_by == ("_hw_run_id",)


def test_the_layout_reaches_the_plan_and_survives_its_json() -> None:
    source = SampleSource({"users": 10})
    connection = load_connection_with(source_streams=[
        {"name": "users", "cluster_by": ["id"], "table_properties": {"team": "growth"}}])
    (configured,) = resolve_streams(source, connection)
    assert configured.table_layout == TableLayout(cluster_by=("id",),
                                                  properties={"team": "growth"})
    assert ConfiguredStream.from_dict(configured.to_dict()) == configured
    # A plan persisted before layouts existed reads back with the default one.
    older = {k: v for k, v in configured.to_dict().items() if k != "table_layout"}
    assert ConfiguredStream.from_dict(older).table_layout.is_default


def load_connection_with(source_streams: list[dict[str, Any]]) -> Any:
    from headwater.config import ConnectionConfig

    return ConnectionConfig.model_validate({
        "name": "layout", "source": {"type": "sample", "config": {"users": 10}},
        "streams": source_streams})
