"""The Delta destination on S3: the task path gives Spark's rows, commits once, and recovers.

On the run's S3-compatible server (moto, 127.0.0.1), reached by Spark through
``s3a://`` and by the task path through the same S3A settings:

* a differential test per append/overwrite mode: the same syncs through the
  task path (``writer: auto``) and through Spark's Delta writer (``writer:
  spark``) give the same rows, read back by Spark;
* a commit whose answer is lost after it landed counts as committed once, and
  a resumed attempt finds it rather than committing it again;
* the destination's own ``commit_files``, raced by threads on one table, same
  and different checkpoints, never loses a commit and never commits a
  checkpoint twice.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pyarrow as pa
import pytest

from headwater.config import load_connection
from headwater.connectors.sample import SampleSource
from headwater.destinations._base import CommitMarker, CommitResult
from headwater.destinations._table_files._parquet import ParquetFiles, WrittenFile
from headwater.destinations._table_files._store import TableFolder
from headwater.destinations.delta import DeltaDestination, _delta_rs
from headwater.destinations.delta._destination import WRITER_TASKS
from headwater.engine import SyncEngine, SyncResult
from headwater.metadata_store import MetadataStore
from tests.integration._connections import connection_file
from tests.integration._s3 import SECRET_KEY, S3Server
from tests.integration.destinations.delta._s3 import access, s3_table
from tests.integration.destinations.delta._s3_proxy import Proxy

pytestmark = pytest.mark.spark

SOURCE = {"seed": 5, "users": 600, "orders": 0, "rows_per_partition": 100,
          "updates_per_generation": 30, "new_per_generation": 20}
MODES = {
    "overwrite": {"name": "users", "sync_mode": "full_refresh",
                  "destination_sync_mode": "overwrite"},
    "full_refresh_append": {"name": "users", "sync_mode": "full_refresh",
                            "destination_sync_mode": "append"},
    "incremental_append": {"name": "users", "sync_mode": "incremental",
                           "destination_sync_mode": "append", "cursor_field": "updated_at"},
}
#: The columns two runs of one plan fill differently (a run id, a time).
PER_RUN_COLUMNS = {"_hw_run_id", "_hw_extracted_at"}


def sync(folder: Path, lake: str, mode: str, writer: str, **source: Any) -> SyncResult:
    path = connection_file(folder, name=f"s3-{writer}", source={**SOURCE, **source},
                           streams=[MODES[mode]], lake=lake, writer=writer,
                           checkpoint={"partitions_per_checkpoint": 2,
                                       "concurrent_checkpoints": 2})
    connection = load_connection(path)
    result = SyncEngine(connection, MetadataStore(connection.metadata_store or "")).run()
    assert result.status == "succeeded", result.to_dict()
    return result


def table_rows(spark: Any, location: str) -> Counter[tuple[Any, ...]]:
    """Every row, with every column but :data:`PER_RUN_COLUMNS` (notes as JSON text)."""
    from pyspark.sql import functions as F

    frame = spark.read.format("delta").load(location)
    columns = [F.to_json(c).alias(c) if c == "_hw_notes" else F.col(c)
               for c in sorted(frame.columns) if c not in PER_RUN_COLUMNS]
    assert len(columns) > 8, frame.columns
    return Counter(tuple(r) for r in frame.select(*columns).collect())


def writers_of(spark: Any, location: str) -> set[str]:
    history = spark.sql(f"DESCRIBE HISTORY delta.`{location}`").collect()
    return {str(r["engineInfo"] or "").split(":")[0].split("/")[0] for r in history
            if r["operation"] == "WRITE"}


@pytest.mark.parametrize("mode", sorted(MODES))
def test_the_task_path_on_s3_gives_the_rows_spark_s_writer_gives(
        spark: Any, s3_bucket: str, tmp_path: Path, mode: str) -> None:
    """Two syncs (generation 0, then 1) into each of two lakes: tasks+delta-rs, and Spark."""
    lakes = {writer: f"s3a://{s3_bucket}/{writer}" for writer in ("auto", "spark")}
    results: dict[str, list[SyncResult]] = {}
    for writer, lake in lakes.items():
        results[writer] = [sync(tmp_path / writer, lake, mode, writer, generation=g)
                           for g in (0, 1)]
    tasks_table, spark_table = (f"{lakes[w]}/users" for w in ("auto", "spark"))
    assert writers_of(spark, tasks_table) == {"delta-rs"}
    assert writers_of(spark, spark_table) == {"Apache-Spark"}
    tasks_rows = table_rows(spark, tasks_table)
    assert tasks_rows == table_rows(spark, spark_table)
    truth = SampleSource({**SOURCE, "generation": 1}).expected_rows("users")
    if mode == "overwrite":
        ids = [r["id"] for r in spark.read.format("delta").load(tasks_table).collect()]
        assert sorted(ids) == sorted(truth.column("id").to_pylist())
    assert [r.streams[0].records_written for r in results["auto"]] == [
        r.streams[0].records_written for r in results["spark"]]
    # The run's staging is gone from the store once published.
    staged = spark.sparkContext._jvm.org.apache.hadoop.fs.Path(f"{tasks_table}/_headwater_staging")
    fs = staged.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
    assert not fs.exists(staged) or not fs.listStatus(staged)


# ------------------------------------------------------------------ commits, one at a time

SCHEMA = pa.schema([pa.field("id", pa.int64())])
LANE = "headwater/store/conn/users"


def plan_of(first_index: int = 1) -> Any:
    from headwater.sync_modes import DestinationSyncMode

    return SimpleNamespace(
        stream=SimpleNamespace(name="users", destination_sync_mode=DestinationSyncMode.APPEND),
        checkpoints=[SimpleNamespace(index=first_index)])


def marker(lane: int, index: int, attempt: int = 1, run_id: str = "run-1") -> CommitMarker:
    return CommitMarker(app_id=f"{LANE}/{lane}", version=index, run_id=run_id,
                        stream="users", checkpoint_index=index, attempt=attempt)


def upload(table: TableFolder, ids: list[int]) -> list[WrittenFile]:
    batch = pa.RecordBatch.from_pydict({"id": ids}, SCHEMA)
    writer = ParquetFiles(folder=table.uri, store=table.store, stats_columns=["id"])
    return [WrittenFile(**row) for out in writer.write(iter([batch])) for row in out.to_pylist()]


def frame_of(spark: Any, written: list[WrittenFile]) -> Any:
    """The files as the tasks' DataFrame hands them to the commit (one row per file)."""
    return spark.createDataFrame(
        [asdict(f) for f in written],
        "path string, size long, modified_ms long, rows long, rejected long, stats string")


def commit(spark: Any, destination: DeltaDestination, written: list[WrittenFile],
           mark: CommitMarker) -> CommitResult:
    checkpoint = SimpleNamespace(index=mark.checkpoint_index)
    return destination.commit_files(spark, plan_of(), checkpoint,  # type: ignore[arg-type]
                                    frame_of(spark, written), mark)


def log_txns(table: TableFolder) -> Counter[tuple[str, int]]:
    found: Counter[tuple[str, int]] = Counter()
    version = 0
    while (text := table.read_text(f"_delta_log/{version:020d}.json")) is not None:
        for line in text.splitlines():
            txn = json.loads(line).get("txn")
            if txn:
                found[(txn["appId"], txn["version"])] += 1
        version += 1
    return found


def test_a_commit_that_landed_and_lost_its_answer_counts_once_and_is_found_on_resume(
        spark: Any, s3_server: S3Server, s3_bucket: str, s3_proxy: Proxy,
        caplog: pytest.LogCaptureFixture) -> None:
    direct = s3_table(s3_server, s3_bucket, "lake/users")
    _delta_rs.create_table(direct, SCHEMA, {})
    written = upload(direct, [1, 2, 3])
    # The driver reaches the bucket through the proxy, which loses the answer to the
    # first commit put the store accepted: the commit is durable, delta-rs sees an error.
    spark.sparkContext._jsc.hadoopConfiguration().set(
        f"fs.s3a.bucket.{s3_bucket}.endpoint", s3_proxy.endpoint)

    s3_proxy.lose_next_commit_answer()
    destination = DeltaDestination({"path": f"s3a://{s3_bucket}/lake"})
    first = commit(spark, destination, written, marker(0, 1))
    assert (first.version, first.rows, first.writer) == (1, 3, WRITER_TASKS)
    lost = [r["path"].rsplit("/", 1)[1] for r in s3_proxy.puts_of_commits()
            if r["answered"] == 500 and r["status"] == 200]
    assert lost == [f"{1:020d}.json"]
    found_on_resume(spark, destination, direct)
    assert SECRET_KEY not in caplog.text


def found_on_resume(spark: Any, destination: DeltaDestination, direct: TableFolder) -> None:
    """Checkpoint 1 of lane 0, committed once, is found by a resumed attempt (the first was
    killed before the store recorded it), and committing it again writes nothing."""
    assert log_txns(direct) == Counter({(f"{LANE}/0", 1): 1})
    found = destination.find_commit(spark, plan_of(), marker(0, 1, attempt=2))  # type: ignore[arg-type]
    assert found is not None and found.already_committed and found.version == 1
    again = commit(spark, destination, upload(direct, [1, 2, 3]), marker(0, 1, attempt=2))
    assert again.already_committed and again.version == 1
    assert log_txns(direct) == Counter({(f"{LANE}/0", 1): 1})


def test_the_destination_s_commits_raced_on_one_table_lose_nothing_and_double_nothing(
        spark: Any, s3_server: S3Server, s3_bucket: str) -> None:
    """Three lanes of three checkpoints, every checkpoint committed by two threads at once.

    A run's checkpoint indices are global (lane 1's are 11..13 here), and each is
    its lane's txn version, as the engine hands them out.
    """
    direct = s3_table(s3_server, s3_bucket, "lake/users")
    _delta_rs.create_table(direct, SCHEMA, {})
    checkpoints = {lane: [lane * 10 + r for r in range(1, 4)] for lane in range(3)}
    files = {(lane, index): upload(direct, [index * 10 + k for k in range(4)])
             for lane, indices in checkpoints.items() for index in indices}
    destination = DeltaDestination({"path": f"s3a://{s3_bucket}/lake"})
    results: list[tuple[int, int, CommitResult | BaseException]] = []
    start = threading.Barrier(len(checkpoints) * 2)

    def committer(lane: int) -> None:
        start.wait()
        for index in checkpoints[lane]:
            try:
                done = commit(spark, destination, files[(lane, index)], marker(lane, index))
                results.append((lane, index, done))
            except BaseException as exc:
                results.append((lane, index, exc))

    threads = [threading.Thread(target=committer, args=(lane,))
               for lane in checkpoints for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    failures = [r for r in results if isinstance(r[2], BaseException)]
    assert not failures, failures
    assert log_txns(direct) == Counter({(f"{LANE}/{lane}", index): 1 for lane, index in files})
    # Both committers of a checkpoint report the one version that holds it.
    versions: dict[tuple[int, int], set[int | None]] = {}
    for lane, index, done in results:
        assert isinstance(done, CommitResult)
        versions.setdefault((lane, index), set()).add(done.version)
    assert all(len(v) == 1 and None not in v for v in versions.values()), versions
    assert sorted(v for vs in versions.values() for v in vs) == list(range(1, len(files) + 1))
    ids = sorted(r["id"] for r in spark.read.format("delta").load(
        f"s3a://{s3_bucket}/lake/users").collect())
    assert ids == sorted(index * 10 + k for _, index in files for k in range(4))


def test_who_writes_which_store(spark: Any, s3_server: S3Server, s3_bucket: str) -> None:
    """S3 gets the task path with the session's S3A settings for the bucket; a store said
    to lack conditional writes, GCS, and Azure without credentials get Spark's writer."""
    def choice(path: str, **config: Any) -> Any:
        return DeltaDestination({"path": path, **config})._files_folder(spark, plan_of())

    on_s3 = choice(f"s3a://{s3_bucket}/lake")
    assert on_s3.folder is not None and on_s3.folder.uri == f"s3://{s3_bucket}/lake/users"
    assert on_s3.folder.store == access(s3_server)  # from fs.s3a.bucket.<bucket>.* alone
    assert SECRET_KEY not in repr(on_s3)
    refused = choice(f"s3a://{s3_bucket}/lake", s3_conditional_writes=False)
    assert refused.folder is None and "s3_conditional_writes: false" in refused.reason
    hadoop = spark.sparkContext._jsc.hadoopConfiguration()
    provider = f"fs.s3a.bucket.{s3_bucket}.aws.credentials.provider"
    hadoop.set(provider, "org.apache.hadoop.fs.s3a.auth.AssumedRoleCredentialProvider")
    try:
        assumed = choice(f"s3a://{s3_bucket}/lake")
    finally:
        hadoop.unset(provider)
    assert assumed.folder is None and "AssumedRoleCredentialProvider" in assumed.reason
    on_gcs = choice("gs://bucket/lake")
    assert on_gcs.folder is None and "other than S3 and Azure" in on_gcs.reason
    assert "no GCS emulator" in on_gcs.reason
    no_key = choice("abfss://c@account.dfs.core.windows.net/lake")
    assert no_key.folder is None and "no fs.azure.account.key.account.dfs" in no_key.reason
