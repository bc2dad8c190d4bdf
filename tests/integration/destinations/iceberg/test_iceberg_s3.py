"""Iceberg tables in a warehouse on S3: the tasks upload the files, PyIceberg commits them once.

On the run's S3-compatible server (moto, 127.0.0.1), with a SQL catalog (a
SQLite file on the local disk: its compare-and-swap of the metadata pointer is
what makes a commit safe on a store without atomic rename):

* a differential: the same syncs (an incremental append to a partitioned table,
  and a full-refresh overwrite staged over several checkpoints) into an S3 warehouse and a local
  one hold the same rows, every column, read by PyIceberg through a catalog
  client of the test's own and by Spark (``s3a://``) from the data files of the
  current snapshot; every data file of the S3 table is in its bucket;
* two destinations (two catalog clients, no shared lock) racing ``commit_files``
  on one table, same and different checkpoints, lose nothing and commit no
  checkpoint twice (the checkpoint markers in the snapshot summaries);
* ``headwater check`` reaches the bucket with the connection's
  ``spark.hadoop.fs.s3a.*`` settings and leaves nothing behind; no secret shows.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest

from headwater.connectors.sample import SampleSource
from headwater.destinations._base import CommitMarker, CommitResult
from headwater.destinations._table_files._parquet import ParquetFiles, WrittenFile
from headwater.destinations.iceberg import IcebergDestination, _catalog, _markers
from headwater.errors import DestinationError, ExitCode
from headwater.sync_modes import DestinationSyncMode
from tests.integration._cli_logs import invoke_logged
from tests.integration._connections import connection_file, sync
from tests.integration._s3 import SECRET_KEY, S3Server
from tests.integration.destinations.delta._s3 import access, new_bucket

pytestmark = pytest.mark.spark

SOURCE = {"seed": 31, "users": 400, "orders": 500, "rows_per_partition": 100,
          "updates_per_generation": 30, "new_per_generation": 20}
STREAMS = [
    # Partitioned: the tasks keep one file per partition value (_layout.py), on S3 too.
    {"name": "users", "sync_mode": "incremental", "destination_sync_mode": "append",
     "cursor_field": "updated_at", "partition_by": ["bucket(4, id)"]},
    # Five partitions, two per checkpoint: staged on a branch, then published.
    {"name": "orders", "sync_mode": "full_refresh", "destination_sync_mode": "overwrite"},
]
#: The columns two runs of one plan fill differently (a run id, a time).
PER_RUN_COLUMNS = {"_hw_run_id", "_hw_extracted_at"}


def destination_config(folder: Path, warehouse: str, uri: str | None = None) -> dict[str, Any]:
    """A SQL catalog at ``uri`` (default: a SQLite file in ``folder``) over ``warehouse``."""
    return {"warehouse": warehouse,
            "catalog": {"type": "sql", "uri": uri or f"sqlite:///{folder}/catalog.db"}}


def write_connection(folder: Path, warehouse: str, generation: int,
                     streams: list[dict[str, Any]] = STREAMS) -> Path:
    return connection_file(
        folder, name="ice-s3", source={**SOURCE, "generation": generation}, streams=streams,
        checkpoint={"partitions_per_checkpoint": 2, "concurrent_checkpoints": 2},
        destination={"type": "iceberg", "config": destination_config(folder, warehouse)})


def reader(folder: Path, warehouse: str, server: S3Server, uri: str | None = None) -> Any:
    """A catalog client of the test's own (its S3 FileIO given the server's keys directly)."""
    from pyiceberg.catalog import load_catalog

    return load_catalog("headwater", type="sql", uri=uri or f"sqlite:///{folder}/catalog.db",
                        warehouse=warehouse.replace("s3a://", "s3://"),
                        **_catalog.file_io_properties(access(server)))


def _plain(value: Any) -> Any:
    """A value as comparable text when it is not hashable (notes: a list of structs)."""
    return json.dumps(value, default=str, sort_keys=True) if isinstance(value, (list, dict)) \
        else value


def rows_of(table: pa.Table) -> Counter[tuple[Any, ...]]:
    """Every row, with every column but :data:`PER_RUN_COLUMNS`."""
    columns = sorted(c for c in table.column_names if c not in PER_RUN_COLUMNS)
    assert len(columns) > 6, table.column_names
    return Counter(tuple(_plain(row[c]) for c in columns)
                   for row in table.select(columns).to_pylist())


def spark_rows(spark: Any, paths: list[str]) -> Counter[tuple[Any, ...]]:
    """The rows Spark reads from the data files ``paths`` (``s3://`` read as ``s3a://``)."""
    from pyspark.sql import functions as F

    frame = spark.read.parquet(*[p.replace("s3://", "s3a://", 1) for p in paths])
    columns = [F.to_json(c).alias(c) if c == "_hw_notes" else F.col(c)
               for c in sorted(frame.columns) if c not in PER_RUN_COLUMNS]
    return Counter(tuple(r) for r in frame.select(*columns).collect())


def assert_same_table(spark: Any, on_s3: Any, local: Any, warehouse: str, *,
                      partitioned: bool) -> None:
    """The table ``on_s3`` (under ``warehouse``, ``s3://bucket/prefix``) holds the rows of
    ``local``, every column: read by PyIceberg's scan (through the S3 FileIO) and by Spark
    from the current snapshot's data files, every one of which is in the table's ``data``
    prefix; its metadata is under its own location, its partitioning as ``partitioned``."""
    location = on_s3.location()
    assert location.startswith(f"{warehouse}/"), location
    assert on_s3.metadata_location.startswith(f"{location}/metadata/")
    assert on_s3.spec().is_unpartitioned() is not partitioned
    s3_files = [t.file.file_path for t in on_s3.scan().plan_files()]
    local_files = [t.file.file_path for t in local.scan().plan_files()]
    assert s3_files and all(p.startswith(f"{location}/data/") for p in s3_files), s3_files
    assert rows_of(on_s3.scan().to_arrow()) == rows_of(local.scan().to_arrow())
    assert spark_rows(spark, s3_files) == spark_rows(spark, local_files)


def test_syncs_to_an_s3_warehouse_give_the_rows_of_a_local_one(
        spark: Any, s3_server: S3Server, s3_bucket: str, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    # As the CLI sets it (cli/_common.py): py4j's DEBUG lines echo every JVM answer raw,
    # the S3A settings read from Spark's Hadoop configuration included.
    caplog.set_level(logging.ERROR, logger="py4j")
    warehouses = {"s3": f"s3a://{s3_bucket}/warehouse",
                  "local": str(tmp_path / "local" / "warehouse")}
    written: dict[str, list[list[int]]] = {}
    for where, warehouse in warehouses.items():
        folder = tmp_path / where
        folder.mkdir()
        results = [sync(write_connection(folder, warehouse, g)) for g in (0, 1)]
        written[where] = [[s.records_written for s in r.streams] for r in results]
    assert written["s3"] == written["local"]
    assert not (tmp_path / "s3" / "warehouse").exists()  # nothing of the S3 one on disk
    s3_catalog = reader(tmp_path / "s3", warehouses["s3"], s3_server)
    local_catalog = reader(tmp_path / "local", warehouses["local"], s3_server)
    for stream in ("users", "orders"):
        assert_same_table(spark, s3_catalog.load_table(f"headwater.{stream}"),
                          local_catalog.load_table(f"headwater.{stream}"),
                          f"s3://{s3_bucket}/warehouse", partitioned=stream == "users")
    truth = SampleSource({**SOURCE, "generation": 1}).expected_rows("orders")
    orders = s3_catalog.load_table("headwater.orders").scan().to_arrow()
    assert sorted(orders.column("id").to_pylist()) == sorted(truth.column("id").to_pylist())
    # The overwrite's staging branch is gone once published.
    assert [r for r in s3_catalog.load_table("headwater.orders").metadata.refs
            if r != "main"] == []
    assert SECRET_KEY not in caplog.text


# --------------------------------------------------------------- racing committers

SCHEMA = pa.schema([pa.field("id", pa.int64())])
LANE = "headwater/store/conn/users"


def plan_of() -> Any:
    return SimpleNamespace(stream=SimpleNamespace(
        name="users", destination_sync_mode=DestinationSyncMode.APPEND))


def marker(lane: int, index: int) -> CommitMarker:
    return CommitMarker(app_id=f"{LANE}/{lane}", version=index, run_id="run-1",
                        stream="users", checkpoint_index=index, attempt=1)


def upload(destination: IcebergDestination, ids: list[int]) -> list[WrittenFile]:
    """Files the tasks would write, written with the tasks' writer into the table's data."""
    folder = destination._folder(None, plan_of())  # type: ignore[arg-type]
    batch = pa.RecordBatch.from_pydict({"id": ids}, SCHEMA)
    writer = ParquetFiles(folder=folder.uri, store=folder.store, stats_columns=())
    return [WrittenFile(**row) for out in writer.write(iter([batch])) for row in out.to_pylist()]


def frame_of(spark: Any, written: list[WrittenFile]) -> Any:
    """The files as the tasks' DataFrame hands them to the commit (one row per file)."""
    return spark.createDataFrame(
        [asdict(f) for f in written],
        "path string, size long, modified_ms long, rows long, rejected long, stats string")


@pytest.fixture(params=["sqlite", "postgresql"])
def catalog_uri(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """The SQL catalog's database: a SQLite file (None: the test's default), or PostgreSQL."""
    if request.param == "sqlite":
        yield None
        return
    server = request.getfixturevalue("postgres_server")
    with server.database() as database:
        yield server.database_url(database).replace("postgresql://", "postgresql+psycopg2://")


def test_two_committers_racing_on_one_s3_table_lose_nothing_and_double_nothing(
        spark: Any, s3_server: S3Server, s3_bucket: str, tmp_path: Path,
        catalog_uri: str | None) -> None:
    """Three lanes of three checkpoints; each checkpoint committed at once by two
    destinations, each with its own catalog client and lock (two processes, as far as
    the catalog can tell), so only the catalog's compare-and-swap keeps them apart."""
    config = destination_config(tmp_path, f"s3a://{s3_bucket}/warehouse", catalog_uri)
    first, second = IcebergDestination(config), IcebergDestination(config)
    catalog = first.catalog()
    _catalog.ensure_namespace(catalog, "headwater")
    _catalog.with_name_mapping(catalog.create_table("headwater.users", schema=SCHEMA))
    checkpoints = {lane: [lane * 10 + r for r in range(1, 4)] for lane in range(3)}
    frames = {(lane, index, who): frame_of(spark, upload(d, [index * 10 + k for k in range(4)]))
              for lane, indices in checkpoints.items() for index in indices
              for who, d in enumerate((first, second))}
    results: list[tuple[int, int, CommitResult | BaseException]] = []
    start = threading.Barrier(len(checkpoints) * 2)

    def committer(lane: int, who: int) -> None:
        destination = (first, second)[who]
        start.wait()
        for index in checkpoints[lane]:
            try:
                done = destination.commit_files(
                    spark, plan_of(), SimpleNamespace(index=index),  # type: ignore[arg-type]
                    frames[(lane, index, who)], marker(lane, index))
                results.append((lane, index, done))
            except BaseException as exc:
                results.append((lane, index, exc))

    pairs = [(lane, who) for lane in checkpoints for who in (0, 1)]
    with ThreadPoolExecutor(len(pairs)) as pool:  # every committer at once (the barrier)
        list(pool.map(lambda pair: committer(*pair), pairs))
    failures = [r for r in results if isinstance(r[2], BaseException)]
    assert not failures, failures
    table = reader(tmp_path, f"s3a://{s3_bucket}/warehouse", s3_server,
                   catalog_uri).load_table("headwater.users")
    tags = Counter((s.summary.additional_properties.get(_markers.APP_ID_KEY),
                    s.summary.additional_properties.get(_markers.VERSION_KEY))
                   for s in table.snapshots() if s.summary is not None)
    expected = {(f"{LANE}/{lane}", str(index)): 1
                for lane, indices in checkpoints.items() for index in indices}
    history = [(s.snapshot_id, s.parent_snapshot_id, s.sequence_number,
                s.summary.additional_properties.get(_markers.VERSION_KEY) if s.summary else None)
               for s in table.snapshots()]
    assert {k: v for k, v in tags.items() if k != (None, None)} == expected, (
        history, table.metadata.refs, [(r[0], r[1], r[2] if isinstance(r[2], BaseException)
                                        else r[2].version) for r in results])
    # Both committers of a checkpoint report the one snapshot that holds it.
    snapshots: dict[tuple[int, int], set[int | None]] = {}
    for lane, index, done in results:
        assert isinstance(done, CommitResult)
        snapshots.setdefault((lane, index), set()).add(done.version)
    assert all(len(s) == 1 and None not in s for s in snapshots.values()), snapshots
    ids = sorted(table.scan().to_arrow().column("id").to_pylist())
    assert ids == sorted(index * 10 + k for indices in checkpoints.values()
                         for index in indices for k in range(4))
    # The losers' files are removed: the data prefix holds the committed files only.
    data = table.location().removeprefix(f"s3://{s3_bucket}/") + "/data/"
    listed = s3_server.client().list_objects_v2(Bucket=s3_bucket, Prefix=data)
    stored = {f"s3://{s3_bucket}/{o['Key']}" for o in listed.get("Contents", [])
              if not o["Key"].endswith("/")}  # folder markers pyarrow puts
    assert stored == {t.file.file_path for t in table.scan().plan_files()}


# ------------------------------------------------------------------------ the check

def check_connection(folder: Path, server: S3Server, warehouse: str) -> Path:
    document = {"name": "icecheck", "source": {"type": "sample", "config": {"users": 10}},
                "destination": {"type": "iceberg",
                                "config": destination_config(folder, warehouse)},
                "spark": {"conf": server.spark_conf()}}
    file = folder / "icecheck.yaml"
    file.write_text(json.dumps(document))  # JSON is YAML
    return file


def test_check_reaches_the_bucket_with_the_connection_s_s3a_settings(
        s3_server: S3Server, tmp_path: Path) -> None:
    bucket = new_bucket(s3_server)
    good = check_connection(tmp_path, s3_server, f"s3a://{bucket}/warehouse")
    passed = invoke_logged(["check", str(good), "--json"])
    assert passed.exit_code == 0, passed.output
    assert json.loads(passed.stdout)["destination"] == {"type": "iceberg",
                                                        "status": "succeeded"}
    # The scratch table is gone, files and folder markers (the namespace stays, as locally).
    left = s3_server.client().list_objects_v2(Bucket=bucket).get("Contents", [])
    assert [o["Key"] for o in left] in ([], ["warehouse/headwater/"])

    missing = check_connection(tmp_path, s3_server, "s3a://hw-no-such-bucket/warehouse")
    failed = invoke_logged(["check", str(missing), "--json"])
    assert failed.exit_code == ExitCode.FAILED, failed.output
    error = json.loads(failed.stdout)["destination"]["error"]
    assert error["type"] == DestinationError.__name__
    assert "the bucket hw-no-such-bucket" in error["message"]
    for shown in (passed.output, failed.output):
        assert SECRET_KEY not in shown
