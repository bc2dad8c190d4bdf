"""Markers in snapshot summaries and table properties; a stream's schema as a table's."""

from __future__ import annotations

import pyarrow as pa

from headwater.destinations._base import CommitMarker, tagged_counts, tagged_partition_states
from headwater.destinations.iceberg._markers import (
    find_tagged,
    held_version,
    lane_versions,
    run_of,
    summary_properties,
    txn_property,
)
from headwater.destinations.iceberg._schema import new_columns, table_schema, writing_schema
from headwater.table_schema import JSON_TEXT, LOGICAL_KEY, META_NAMES, VARIANT, json_kind


def _marker(run: str = "r1", checkpoint: int = 4, **extra: object) -> CommitMarker:
    return CommitMarker(app_id="store-conn-users-0", version=checkpoint, run_id=run,
                        stream="users", checkpoint_index=checkpoint, **extra)  # type: ignore


def test_a_summary_carries_the_pair_and_the_tag_with_counts_and_states() -> None:
    marker = _marker(partition_states={"p1": {"cursor": 3}})
    summary = summary_properties(marker, marker.tag_with_counts(10, 1, 2048))
    assert summary["headwater.app_id"] == "store-conn-users-0"
    assert summary["headwater.version"] == "4"
    assert tagged_counts(summary["headwater.tag"]) == {"rows": 10, "rejected": 1, "bytes": 2048}
    assert tagged_partition_states(summary["headwater.tag"]) == {"p1": {"cursor": 3}}


def test_the_checkpoints_snapshot_is_found_by_run_stream_and_checkpoint() -> None:
    ours = _marker()
    snapshots = [
        (30, {"operation": "append"}),  # not ours: no tag
        (20, summary_properties(_marker(run="r0"), _marker(run="r0").tag)),
        (10, summary_properties(ours, ours.tag_with_counts(1, 0, 1))),
        (5, {"headwater.tag": "not json"}),
    ]
    found = find_tagged(snapshots, ours)
    assert found is not None and found.snapshot_id == 10
    assert find_tagged(snapshots, _marker(checkpoint=5)) is None
    other = find_tagged(snapshots, _marker(run="r9"), any_run=True)
    assert other is not None and other.snapshot_id == 20 and run_of(other.tag) == "r0"


def test_lane_versions_live_in_table_properties() -> None:
    properties = {txn_property("store-conn-users-0"): "7",
                  txn_property("store-conn-users-1"): "8",
                  txn_property("store-conn-orders-0"): "3", "other": "x"}
    assert held_version(properties, "store-conn-users-0") == 7
    assert held_version(properties, "store-conn-users-2") is None
    assert lane_versions(properties, "store-conn-users-") == {
        "store-conn-users-0": 7, "store-conn-users-1": 8}


def test_a_new_table_is_metadata_then_data_all_optional_open_values_as_text() -> None:
    data = pa.schema([pa.field("id", pa.int64(), nullable=False),
                      pa.field("extra", pa.string(), metadata={LOGICAL_KEY: VARIANT})])
    schema = table_schema(data)
    assert schema.names == [*META_NAMES, "id", "extra"]
    assert all(f.nullable for f in schema)
    assert json_kind(schema.field("extra")) == JSON_TEXT
    assert new_columns({*META_NAMES, "id"}, data).names == ["extra"]


def test_existing_columns_keep_the_tables_types() -> None:
    from pyiceberg.schema import Schema
    from pyiceberg.types import ListType, LongType, NestedField, StringType, StructType

    table = Schema(
        NestedField(1, "id", StringType(), required=False),
        NestedField(2, "tags", ListType(3, StringType(), element_required=False),
                    required=False),
        NestedField(4, "address", StructType(NestedField(5, "city", StringType(),
                                                         required=False)), required=False),
        NestedField(6, "n", LongType(), required=False))
    data = pa.schema([pa.field("id", pa.int64()), pa.field("tags", pa.list_(pa.string())),
                      pa.field("address", pa.struct([("city", pa.string()),
                                                     ("zip", pa.string())])),
                      pa.field("n", pa.int64()), pa.field("new", pa.bool_()),
                      pa.field("blob", pa.string(), metadata={LOGICAL_KEY: VARIANT})])
    written = writing_schema(data, table)
    assert written.field("id").type == pa.string()  # the table's type wins
    assert written.field("tags").type == pa.list_(pa.string())  # plain, not large types
    assert written.field("address").type == pa.struct([("city", pa.string())])
    assert written.field("n").type == pa.int64()
    assert written.field("new").type == pa.bool_()
    assert json_kind(written.field("blob")) == JSON_TEXT
