"""Iceberg tables laid out as the stream asks: partition spec, properties, files one partition each.

Real Spark and PyIceberg on the default (hadoop) catalog (a partitioned table's
overwrite on every catalog kind: each catalog creates the spec its own way).  The source's rows
are one a second from 23:55, so 600 rows span two days: ``days(updated_at)``
has two partitions and ``country`` several.  Read back with PyIceberg, a
partition filter must prune files (``plan_files``), and the rows must be those
of an unpartitioned table.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from pyiceberg.expressions import EqualTo, GreaterThanOrEqual

from headwater.config import load_connection
from headwater.errors import ConfigError, SpecValidationError
from tests.integration._connections import sync
from tests.integration.destinations.iceberg.test_iceberg_syncs import (
    SOURCE,
    USERS,
    table_of,
    write_connection,
)

pytestmark = pytest.mark.spark

START = "2024-03-09T23:55:00Z"
SECOND_DAY = "2024-03-10T00:00:00+00:00"


def _stream(**layout: Any) -> list[dict[str, Any]]:
    return [{"name": "users", "sync_mode": "full_refresh", "destination_sync_mode": "append",
             **layout}]


def _synced(tmp_path: Path, **layout: Any) -> Any:
    path = write_connection(tmp_path, _stream(**layout), start=START)
    sync(path)
    return table_of(path)


def _sorted(rows: pa.Table) -> pa.Table:
    data = rows.select([n for n in rows.column_names if not n.startswith("_hw_")])
    return data.sort_by("id")


def test_days_and_identity_partitions_prune_files_and_hold_the_same_rows(
        spark: Any, tmp_path: Path) -> None:
    plain = _synced(tmp_path / "plain")
    by_day = _synced(tmp_path / "day", partition_by=["days(updated_at)"],
                     table_properties={"write.metadata.previous-versions-max": 7,
                                       "owner": "data-team"})
    by_country = _synced(tmp_path / "country", partition_by=["country"])

    assert [str(f.transform) for f in by_day.spec().fields] == ["day"]
    assert [f.name for f in by_day.spec().fields] == ["updated_at_day"]
    assert [(f.name, str(f.transform)) for f in by_country.spec().fields] == [
        ("country", "identity")]
    assert plain.spec().is_unpartitioned()
    assert by_day.properties["owner"] == "data-team"
    assert by_day.properties["write.metadata.previous-versions-max"] == "7"

    everything = _sorted(plain.scan().to_arrow())
    assert everything.num_rows == USERS
    assert _sorted(by_day.scan().to_arrow()).equals(everything)
    assert _sorted(by_country.scan().to_arrow()).equals(everything)

    # Every file holds one partition value, and its record says which.
    day_files = list(by_day.scan().plan_files())
    assert len({t.file.partition[0] for t in day_files}) == 2
    second_day = GreaterThanOrEqual("updated_at", SECOND_DAY)
    pruned = list(by_day.scan(row_filter=second_day).plan_files())
    assert 0 < len(pruned) < len(day_files)
    on_second_day = by_day.scan(row_filter=second_day).to_arrow()
    expected_second = everything.filter(
        pc.greater_equal(everything.column("updated_at"),
                         pa.scalar(pa.array([SECOND_DAY]).cast(
                             pa.timestamp("us", tz="UTC"))[0])))
    assert on_second_day.num_rows == expected_second.num_rows == USERS // 2

    country_files = list(by_country.scan().plan_files())
    countries = set(everything.column("country").to_pylist())
    assert {t.file.partition[0] for t in country_files} == countries
    gb = list(by_country.scan(row_filter=EqualTo("country", "GB")).plan_files())
    assert 0 < len(gb) < len(country_files)
    assert {t.file.partition[0] for t in gb} == {"GB"}
    gb_rows = by_country.scan(row_filter=EqualTo("country", "GB")).to_arrow()
    assert set(gb_rows.column("country").to_pylist()) == {"GB"}
    assert gb_rows.num_rows == everything.column("country").to_pylist().count("GB")


def test_bucket_and_truncate_files_hold_one_partition_each(spark: Any, tmp_path: Path) -> None:
    table = _synced(tmp_path, partition_by=["bucket(4, id)", "truncate(1, email)"])
    assert [f.name for f in table.spec().fields] == ["id_bucket", "email_trunc"]
    from pyiceberg.transforms import BucketTransform
    from pyiceberg.types import LongType

    bucket = BucketTransform(4).transform(LongType())
    for task in table.scan().plan_files():
        assert task.file.partition[0] in range(4)
        assert len(task.file.partition[1]) == 1
    rows = table.scan().to_arrow()
    assert rows.num_rows == USERS
    # Pruning by bucket: a filter on one id reads only its bucket's files.
    files = list(table.scan().plan_files())
    one = list(table.scan(row_filter=EqualTo("id", 7)).plan_files())
    assert 0 < len(one) < len(files)
    assert {t.file.partition[0] for t in one} == {bucket(7)}


def test_an_existing_table_keeps_its_partitioning_and_says_so(
        spark: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    _synced(tmp_path, partition_by=["country"])
    with caplog.at_level(logging.WARNING):
        table = _synced(tmp_path, partition_by=["days(updated_at)"],
                        table_properties={"owner": "later"})
    assert [f.name for f in table.spec().fields] == ["country"]
    assert table.properties["owner"] == "later"  # properties are set on an existing table
    assert "partitioned by [country]" in caplog.text
    assert "partition_by [days(updated_at)]" in caplog.text
    assert table.scan().to_arrow().num_rows == 2 * USERS
    # The second sync's files were split by the table's spec, not the file's.
    assert all(t.file.partition[0] is not None for t in table.scan().plan_files())


def test_a_bad_layout_is_refused_naming_the_field(spark: Any, tmp_path: Path) -> None:
    with pytest.raises(SpecValidationError) as bad:
        load_connection(write_connection(tmp_path, _stream(partition_by=["days(updated_at"])))
    assert bad.value.problems[0][0] == "streams[0].partition_by"
    assert "bucket(N, column)" in bad.value.problems[0][1]
    with pytest.raises(ConfigError, match="cluster_by: the iceberg destination does not "
                       "cluster") as clustered:
        sync(write_connection(tmp_path, _stream(cluster_by=["country"])))
    assert clustered.value.context["field"] == "streams[0].cluster_by"
    floats = sync(write_connection(tmp_path, _stream(partition_by=["bucket(4, name)",
                                                                   "years(age)"])), expect="failed")
    assert "years(age)" in (floats.streams[0].error or ""), floats.to_dict()


def test_transforms_are_refused_for_delta(spark: Any, tmp_path: Path) -> None:
    from tests.integration._connections import connection_file

    path = connection_file(tmp_path, name="d", source=SOURCE,
                           streams=_stream(partition_by=["days(updated_at)"]))
    with pytest.raises(ConfigError, match=r"'days.updated_at.' is a partition "
                       "transform; the delta destination partitions by plain columns"):
        sync(path)


def test_an_overwrite_replaces_every_partition_s_files(
        spark: Any, tmp_path: Path, config: dict[str, Any]) -> None:
    # On every catalog: the catalog assigns the spec's field ids when it creates the table.
    streams = [{"name": "users", "sync_mode": "full_refresh",
                "destination_sync_mode": "overwrite", "partition_by": ["days(updated_at)"]}]
    sync(write_connection(tmp_path, streams, per_checkpoint=16, start=START,
                          destination=config))
    path = write_connection(tmp_path, streams, per_checkpoint=16, start=START, generation=1,
                            destination=config)
    second = sync(path)
    table = table_of(path)
    rows = table.scan().to_arrow()
    assert set(rows.column("_hw_run_id").to_pylist()) == {second.run_id}
    assert rows.num_rows == USERS + SOURCE["new_per_generation"]
    assert {t.file.partition[0] for t in table.scan().plan_files()} >= {19791, 19792}
