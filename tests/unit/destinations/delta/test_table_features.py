"""The task path's allowlist: which tables it may write, decided on their protocol and metadata."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from headwater.destinations.delta import _delta_rs
from headwater.destinations.delta._table_features import TableProtocol, task_path_refusal
from headwater.table_schema import META_FIELDS


def field(name: str, data_type: Any = "long", nullable: bool = True,
          **metadata: Any) -> dict[str, Any]:
    return {"name": name, "type": data_type, "nullable": nullable, "metadata": metadata}


def table(reader: int = 1, writer: int = 2, readers: tuple[str, ...] = (),
          writers: tuple[str, ...] = (), properties: dict[str, str] | None = None,
          fields: list[dict[str, Any]] | None = None,
          partitions: tuple[str, ...] = ()) -> TableProtocol:
    return TableProtocol(min_reader_version=reader, min_writer_version=writer,
                         reader_features=readers, writer_features=writers,
                         properties=properties or {},
                         schema_json={"type": "struct", "fields": fields or [field("id")]},
                         partition_columns=partitions)


@pytest.mark.parametrize("allowed", [
    table(1, 1),
    table(1, 2),
    table(1, 2, properties={"delta.appendOnly": "false", "delta.checkpointInterval": "10",
                            "delta.autoOptimize.optimizeWrite": "false"}),
    # Spark moves a table with a timestamp_ntz column to table features, listing the
    # legacy appendOnly and invariants with it: unused, they are fine.
    table(3, 7, ("timestampNtz",), ("appendOnly", "invariants", "timestampNtz")),
    table(3, 7, ("deletionVectors",), ("deletionVectors",),
          properties={"delta.enableDeletionVectors": "true"}),
    table(1, 7, (), ("appendOnly", "invariants")),
    table(1, 2, properties={"delta.columnMapping.mode": "none"}),
    table(fields=[field("s", {"type": "struct", "fields": [field("a")]}),
                  field("l", {"type": "array", "elementType": "long", "containsNull": True})]),
])
def test_tables_on_the_allowlist_take_task_written_files(allowed: TableProtocol) -> None:
    assert task_path_refusal(allowed) is None


@pytest.mark.parametrize(("refused", "reason"), [
    (table(2, 5, properties={"delta.columnMapping.mode": "name"}),
     "table uses column mapping (delta.columnMapping.mode=name)"),
    (table(3, 7, ("columnMapping",), ("columnMapping",),
           properties={"delta.columnMapping.mode": "id"}),
     "table uses column mapping (delta.columnMapping.mode=id)"),
    # The feature alone (mode dropped from the configuration) still sends it to Spark.
    (table(3, 7, ("columnMapping",), ("columnMapping",)),
     "table uses column mapping; reader feature columnMapping not on the task path's "
     "allowlist (protocol (3, 7))"),
    (table(2, 5), "reader version 2 is not on the task path's allowlist (column mapping)"),
    (table(1, 3, properties={"delta.constraints.positive": "id > 0"}),
     "table has CHECK constraints (delta.constraints.positive)"),
    (table(1, 7, (), ("appendOnly", "checkConstraints", "invariants")),
     "table uses CHECK constraints; writer feature checkConstraints not on"),
    (table(1, 3), "table protocol (1, 3): writer version 3 is not on the task path's"),
    (table(1, 4), "writer version 4"),
    (table(1, 6), "writer version 6"),
    (table(1, 7, (), ("generatedColumns",)), "table uses generated columns"),
    (table(1, 7, (), ("identityColumns",)), "table uses identity columns"),
    (table(1, 7, (), ("changeDataFeed",)), "writer feature changeDataFeed not on"),
    (table(1, 7, (), ("rowTracking", "domainMetadata")),
     "writer features domainMetadata, rowTracking not on"),
    (table(1, 7, (), ("appendOnly", "clustering", "domainMetadata", "invariants")),
     "table uses liquid clustering; writer features clustering, domainMetadata not on"),
    (table(3, 7, ("v2Checkpoint",), ("v2Checkpoint",)), "reader feature v2Checkpoint"),
    (table(3, 7, ("someFeatureOfTomorrow",), ()), "reader feature someFeatureOfTomorrow"),
    (table(1, 7, (), ("someFeatureOfTomorrow",)), "writer feature someFeatureOfTomorrow"),
    (table(4, 8), "reader version 4 is not on"),
    (table(1, 8), "writer version 8 is not on"),
    (table(properties={"delta.appendOnly": "true"}),
     "table is append-only (delta.appendOnly=true)"),
    (table(properties={"delta.autoOptimize.optimizeWrite": "true"}),
     "table asks its writers for optimized writes (delta.autoOptimize.optimizeWrite=true)"),
    (table(properties={"delta.autoOptimize.autoCompact": "auto"}),
     "table asks its writers for auto compaction (delta.autoOptimize.autoCompact=auto)"),
    (table(partitions=("day",), fields=[field("id"), field("day", "date")]),
     "table is partitioned by day"),
    (table(fields=[field("id"), field("twice", **{"delta.generationExpression": "id * 2"})]),
     "column twice is a generated column"),
    (table(fields=[field("id", **{"delta.identity.start": 1, "delta.identity.step": 1})]),
     "column id is an identity column"),
    (table(fields=[field("s", {"type": "struct", "fields": [
        field("a", **{"delta.invariants": '{"expression": {"expression": "a > 0"}}'})]})]),
     "column s.a has an invariant"),
    (table(fields=[field("id", nullable=False)]), "column id is NOT NULL"),
    (table(fields=[field("s", {"type": "struct", "fields": [field("a", nullable=False)]})]),
     "column s.a is NOT NULL"),
    (table(fields=[field("l", {"type": "array", "elementType": "long",
                               "containsNull": False})]),
     "column l.element is NOT NULL"),
    (table(fields=[field("id", **{"delta.columnMapping.physicalName": "col-1"})]),
     "column id has column-mapping metadata"),
])
def test_anything_else_is_spark_s_to_write_with_the_reason(refused: TableProtocol,
                                                           reason: str) -> None:
    found = task_path_refusal(refused)
    assert found is not None and reason in found


def test_a_table_headwater_creates_through_delta_rs_qualifies(tmp_path: Path) -> None:
    """Read back from the created table's log, with a timestamp_ntz and nested columns."""
    schema = pa.schema([*META_FIELDS, pa.field("id", pa.int64()),
                        pa.field("seen", pa.timestamp("us")),
                        pa.field("tags", pa.list_(pa.string())),
                        pa.field("address", pa.struct([pa.field("city", pa.string())]))])
    created = _delta_rs.create_table(str(tmp_path), schema,
                                     {"delta.dataSkippingStatsColumns": "`id`"})
    assert task_path_refusal(created.protocol) is None
    loaded = _delta_rs.table_state(str(tmp_path))
    assert loaded is not None and loaded.protocol == created.protocol
    assert (loaded.protocol.min_reader_version, loaded.protocol.min_writer_version) == (3, 7)
