"""The files destination end to end: ``headwater sync`` of a connection file, in the test
process on the shared Spark session (``_in_process``), read back from outside Headwater with
plain pyarrow following the manifests (``_plain.py``, the reader the docs show).

Each format lands both of its modes (an incremental append, and an overwrite of several
checkpoints, staged then published) over two syncs; JSON Lines and CSV keep decimals,
timestamps and nested objects; and a bucket of the run's S3-compatible server takes the
same files and manifests as a local folder does.
"""

from __future__ import annotations

import json
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from headwater.connectors.sample import SampleSource
from headwater.metadata_store import MetadataStore
from tests.integration._cli import FAULT, CliResult
from tests.integration._connections import connection_file
from tests.integration._in_process import run_in_process
from tests.integration._s3 import S3Server
from tests.integration.destinations.files._plain import read_stream

pytestmark = pytest.mark.spark

SOURCE: dict[str, Any] = {"seed": 5, "users": 300, "orders": 300, "rows_per_partition": 100,
                          "updates_per_generation": 7, "new_per_generation": 5}
STREAMS = [
    {"name": "users", "sync_mode": "incremental", "destination_sync_mode": "append",
     "cursor_field": "updated_at"},
    {"name": "orders", "sync_mode": "full_refresh", "destination_sync_mode": "overwrite"},
]
COLUMNS = ["id", "name", "email", "age", "updated_at"]


def _rows(table: pa.Table, columns: list[str]) -> Counter[tuple[Any, ...]]:
    return Counter(zip(*(table.column(c).to_pylist() for c in columns), strict=True))


def _sync(tmp_path: Path, destination: dict[str, Any], source: dict[str, Any],
          streams: list[dict[str, Any]], source_type: str = "sample",
          env: dict[str, str] | None = None, **extra: Any) -> CliResult:
    path = connection_file(tmp_path, name="files", source=source, streams=streams,
                           source_type=source_type, checkpoint={"partitions_per_checkpoint": 1},
                           destination=destination, **extra)
    result = run_in_process(tmp_path, "sync", str(path), "--json", env=env)
    assert result.exit_code == 0, result.describe()
    assert result.document is not None
    return result


@pytest.mark.parametrize(("fmt", "compression"),
                         [("parquet", "zstd"), ("jsonl", "gzip"), ("csv", "none")])
def test_append_and_staged_overwrite_in_each_format(spark: Any, tmp_path: Path, fmt: str,
                                                    compression: str) -> None:
    destination = {"type": "files", "config": {"path": "exports", "format": fmt,
                                               "compression": compression}}
    _sync(tmp_path, destination, SOURCE, STREAMS)
    later = {**SOURCE, "generation": 1}
    _sync(tmp_path, destination, later, STREAMS)

    # users, appended: every version of every row once (the first world, then what changed).
    before = SampleSource(SOURCE).expected_rows("users")
    after = SampleSource(later).expected_rows("users")
    wanted = _rows(before, COLUMNS) + (_rows(after, COLUMNS) - _rows(before, COLUMNS))
    users = read_stream(str(tmp_path / "exports" / "users"))
    assert _rows(users, COLUMNS) == wanted
    # orders, overwritten by three staged checkpoints: exactly the later world.
    orders = read_stream(str(tmp_path / "exports" / "orders"))
    columns = SampleSource(later).expected_rows("orders").column_names
    assert _rows(orders, columns) == _rows(SampleSource(later).expected_rows("orders"), columns)
    manifests = sorted((tmp_path / "exports" / "orders" / "_manifests").glob("*.json"))
    assert [json.loads(p.read_text())["replace"] for p in manifests] == [True, True]
    assert not (tmp_path / "exports" / "orders" / "_staging").exists() or not any(
        (tmp_path / "exports" / "orders" / "_staging").iterdir())


#: A JSON Lines object whose declared schema has a decimal, timestamps, a nested object and
#: an open one (kept as JSON text).
RECORDS = [
    {"id": 1, "price": "1234567890.123456789", "at": "2026-03-04T05:06:07.891011Z",
     "address": {"city": "Zürich", "zip": "8001"}, "extra": {"deep": [1, {"x": None}]}},
    {"id": 2, "price": "-0.000000001", "at": "1999-12-31T23:59:59Z", "address": None,
     "extra": None},
]
SCHEMA = {
    "id": {"type": "integer"},
    "price": {"type": "number", "format": "decimal", "precision": 38, "scale": 9},
    "at": {"type": "string", "format": "date-time"},
    "address": {"type": ["object", "null"],
                "properties": {"city": {"type": "string"}, "zip": {"type": "string"}}},
    "extra": {"type": ["object", "null"]},
}


def test_a_commit_that_raised_after_its_manifest_landed_counts_as_committed(
        spark: Any, tmp_path: Path) -> None:
    """The second checkpoint's manifest lands, then its commit raises (as when a store's
    answer is lost): the destination looks its marker up in the log, finds the manifest
    and reports the commit made, so the checkpoint is released once and its rows are in
    the table once (called failed, the next run would have appended them again)."""
    destination = {"type": "files", "config": {"path": "exports", "format": "parquet"}}
    done = _sync(tmp_path, destination, SOURCE, STREAMS[:1],
                 env={FAULT: "raise-commit-landed:2"})
    assert done.document is not None and done.document["status"] == "succeeded"
    assert "raised after its manifest 1 landed, so it counts as committed" in done.stderr, \
        done.describe()
    users = read_stream(str(tmp_path / "exports" / "users"))
    assert _rows(users, COLUMNS) == _rows(SampleSource(SOURCE).expected_rows("users"), COLUMNS)
    store = MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}")
    statuses = [c.status for c in store.list_checkpoints(done.document["run_id"])]
    assert statuses == ["released"] * 3, statuses


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_text_formats_keep_decimals_timestamps_and_nested_objects(spark: Any, tmp_path: Path,
                                                                  fmt: str) -> None:
    import datetime as dt

    from headwater.destinations.files import read_table

    inbox = tmp_path / "inbox"
    inbox.mkdir()
    (inbox / "a.jsonl").write_text("\n".join(json.dumps(r) for r in RECORDS) + "\n")
    source = {"url": str(inbox), "streams": [{"name": "items", "globs": ["*.jsonl"],
                                              "schema": SCHEMA}]}
    destination = {"type": "files", "config": {"path": "exports", "format": fmt,
                                               "compression": "gzip"}}
    _sync(tmp_path, destination, source,
          [{"name": "items", "sync_mode": "full_refresh", "destination_sync_mode": "append"}],
          source_type="object_storage")

    table = read_table(str(tmp_path / "exports"), "items").sort_by("id")
    assert table.column("price").to_pylist() == [Decimal("1234567890.123456789"),
                                                 Decimal("-0.000000001")]
    assert table.column("at").to_pylist() == [
        dt.datetime(2026, 3, 4, 5, 6, 7, 891011, tzinfo=dt.UTC),
        dt.datetime(1999, 12, 31, 23, 59, 59, tzinfo=dt.UTC)]
    address = table.column("address").to_pylist()
    if fmt == "csv":  # no nested values in CSV: the object as JSON text
        address = [None if a is None else json.loads(a) for a in address]
    assert address == [{"city": "Zürich", "zip": "8001"}, None]
    assert [None if e is None else json.loads(e) for e in table.column("extra").to_pylist()] \
        == [{"deep": [1, {"x": None}]}, None]
    # The file itself, as any reader sees it: the decimal's exact digits in the text.
    [data] = (tmp_path / "exports" / "items").glob("part-*.gz")
    import gzip

    text = gzip.decompress(data.read_bytes()).decode()
    assert "1234567890.123456789" in text and "2026-03-04" in text


def test_a_bucket_takes_the_files_and_manifests(spark: Any, tmp_path: Path,
                                               s3_server: S3Server) -> None:
    from headwater.destinations._table_files._create import create_text
    from headwater.destinations.files import FilesDestination, read_table
    from headwater.destinations.files._manifests import manifest_name
    from tests.integration.destinations.delta._s3 import hadoop_settings, new_bucket, s3_table
    from tests.integration.destinations.delta._tables import session_settings

    bucket = new_bucket(s3_server)
    config = {"path": f"s3://{bucket}/exports", "format": "jsonl", "compression": "zstd"}
    with session_settings(spark, hadoop_settings(s3_server, bucket)):
        checked = FilesDestination(config)
        checked.use_spark_conf({f"spark.hadoop.{k}": v
                                for k, v in hadoop_settings(s3_server, bucket).items()})
        checked.check()  # reachable, and the store refuses a second conditional put
        document = _sync(tmp_path, {"type": "files", "config": config}, SOURCE,
                         STREAMS[:1]).document
    assert document is not None and document["streams"][0]["records_written"] == 300
    store, exports = s3_table(s3_server, bucket, "exports").filesystem()
    table = read_table(exports, "users", filesystem=store)
    expected = SampleSource(SOURCE).expected_rows("users")
    assert _rows(table, COLUMNS) == _rows(expected, COLUMNS)
    # A manifest in the bucket cannot be replaced: the conditional put is refused.
    users = s3_table(s3_server, bucket, "exports/users")
    first = users.read_text(manifest_name(0))
    assert first is not None and not create_text(users, manifest_name(0), "replaced")
    assert users.read_text(manifest_name(0)) == first
