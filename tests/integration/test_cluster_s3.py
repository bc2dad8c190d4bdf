"""A standalone cluster (master, two workers) syncing into Delta tables on an S3-compatible
server: every append/overwrite mode, and killed syncs resumed.

The CLI runs the driver (``--master spark://...``); executors on the two workers
read the source and write the tables' files to ``s3a://`` on the run's moto
server (``s3_server``), reached over HTTP as any S3 store would be; the
driver commits.  Nothing of the table is on this machine's disk.  The checks
are the crash tests' (``test_crash_resume``): the table equals the source,
every planned checkpoint committed once, on the same connections but with the
tables in a bucket.  Each checkpoint's record says which writer committed it
and why (``writer``, ``writer_reason``), and each test asserts it: the task
path (executors upload the Parquet files to the table's prefix, the driver
commits through delta-rs with the store's conditional writes) for ``append``
and ``overwrite``, and the reference path, Spark's Delta writer, for
``append_dedup`` (MERGE).  (Two connections syncing side by side on the cluster into one
metadata store: ``test_cluster_iceberg_s3``; a connection that asks for Spark's writer on
S3: ``destinations/delta/test_s3_destination``.)

The first test is also the suite's proof that a sync runs on a cluster at all: the
executors' logs show a Python task per planned partition (the executors, not the
driver, read), and each executor fetched Delta's and the S3 connector's jars from
the driver.

The source is small (4,000 rows, 8 partitions, 4 checkpoints in 2 lanes): a
sync's cost here is three JVMs and Spark's per-job overhead, not rows.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from headwater.destinations.delta._destination import WRITER_SPARK, WRITER_TASKS
from tests.integration._cli import (
    READING_PAUSE,
    CliResult,
    assert_each_checkpoint_committed_once,
    assert_table_equals_source,
    planned_partitions,
    start_cli,
    store,
    sync,
    tagged_commits,
)
from tests.integration._cluster import StandaloneCluster
from tests.integration._connections import connection_file
from tests.integration._s3 import SECRET_KEY, S3Server
from tests.integration._side_by_side import Scenarios, SideBySide, side_by_side
from tests.integration.test_crash_resume import (
    NAME,
    STREAM,
    STREAMS,
    Connection,
    crashed_run,
    kill_while_reading,
    landed_checkpoints,
    resume,
)

pytestmark = [pytest.mark.cluster, pytest.mark.spark]

BUCKET = "cluster-lake"
SOURCE_CHANGES = {"users": 4_000, "rows_per_partition": 500}
CHECKPOINT = {"partitions_per_checkpoint": 2, "concurrent_checkpoints": 2}
#: The driver of a CLI sync binds to loopback, as the workers do.
DRIVER_ENV = {"SPARK_LOCAL_IP": "127.0.0.1"}
#: Why the task path writes a table on S3, and why Spark does (``writer_reason``).
TASKS_ON_S3 = "S3 with conditional writes"
MERGE = "MERGE"


@pytest.fixture(scope="module")
def lake(spark: Any, s3_server: S3Server) -> Iterator[str]:
    """The bucket every test's tables go to (a folder each); the test process's own Spark
    session reads them back through the same ``s3a`` settings the syncs use."""
    configuration = spark.sparkContext._jsc.hadoopConfiguration()
    for key, value in s3_server.spark_conf().items():
        configuration.set(key.removeprefix("spark.hadoop."), value)
    yield s3_server.bucket(BUCKET)


@dataclass
class OnCluster(Connection):
    """A crash-test connection whose tables are on S3 and whose syncs run on the cluster."""

    cluster: StandaloneCluster | None = None
    s3: S3Server | None = None
    folder: str = ""
    name: str = NAME
    checkpoint: Mapping[str, int] = field(default_factory=lambda: CHECKPOINT)
    #: ``spark.cores.max``: one lets another application run on the other worker meanwhile.
    cores: int | None = None

    def write(self, generation: int = 0,
              streams: list[Mapping[str, Any]] | None = None) -> Path:
        assert self.s3 is not None
        return connection_file(
            self.tmp_path, name=self.name, source=self.source(generation),
            streams=streams or [STREAMS[self.mode]], lake=f"s3a://{BUCKET}/{self.folder}",
            store_file=None,
            checkpoint=dict(self.checkpoint), writer=self.writer,
            spark={"conf": {**self.s3.spark_conf(), **(
                {"spark.cores.max": str(self.cores)} if self.cores else {})}})

    #: The driver runs on the cluster's side of a CLI process: executors elsewhere get
    #: partitions pickled by a driver that is not the test.
    resumes_in_process = False

    def sync(self, generation: int = 0, fault: str | None = None) -> CliResult:
        env = {**DRIVER_ENV, **({"HEADWATER_FAULT": fault} if fault else {})}
        return sync(self.tmp_path, self.write(generation), *self._master(), env=env)

    def start(self, generation: int = 0) -> Any:
        return start_cli(self.tmp_path, "sync", str(self.write(generation)), "--json",
                         *self._master(), env={**DRIVER_ENV, **READING_PAUSE})

    def _master(self) -> list[str]:
        assert self.cluster is not None
        return ["--master", self.cluster.master_url]

    @property
    def location(self) -> str:  # type: ignore[override]
        return f"s3a://{BUCKET}/{self.folder}/{STREAM}"


def on_cluster(tmp_path: Path, mode: str, cluster: StandaloneCluster, s3: S3Server,
               **extra: Any) -> OnCluster:
    """A connection of ``mode`` in ``tmp_path``, its tables under a folder of its own."""
    folder = extra.pop("folder", tmp_path.name)
    changes = extra.pop("changes", SOURCE_CHANGES)
    return OnCluster(tmp_path, mode, changes=dict(changes), cluster=cluster, s3=s3,
                     folder=folder, **extra)


def committed_writers(tmp_path: Path, run_id: str, stream: str) -> set[tuple[str, str]]:
    """``(writer, writer_reason)`` of every checkpoint of ``stream`` the run committed itself."""
    return {(c.stats["writer"], c.stats["writer_reason"])
            for c in store(tmp_path).list_checkpoints(run_id)
            if c.stream == stream and c.status in ("committed", "released")
            and not c.stats.get("already_committed")}


def assert_writer(tmp_path: Path, run_id: str, stream: str, writer: str, why: str) -> None:
    """``writer`` committed every checkpoint of ``stream`` the run committed, for a reason
    that says ``why``."""
    writers = committed_writers(tmp_path, run_id, stream)
    assert writers, f"run {run_id} committed no checkpoint of {stream} itself"
    assert {w for w, _ in writers} == {writer}, writers
    assert all(why in reason for _, reason in writers), writers


def assert_ran_on_the_cluster(cluster: StandaloneCluster, name: str) -> None:
    """The connection's application ran on the cluster, in executors the workers launched."""
    executors = cluster.executor_dirs(f"headwater-{name}")
    assert executors, f"headwater-{name} did not run on {cluster.master_url}"
    # The executors of each application hold the S3 connector and Delta's jars, fetched from
    # the driver.  Per application, not per folder: a worker may launch one more executor
    # for a killed driver's application before the master drops it, which fetches nothing
    # (CI saw one; the applications share the connection's name across this module's tests).
    applications: dict[Path, list[Path]] = {}
    for folder in executors:
        applications.setdefault(folder.parent, []).append(folder)
    for jar in ("*hadoop-aws-*.jar", "io.delta_delta-spark_*.jar"):
        for app, folders in applications.items():
            assert any(any(d.glob(jar)) for d in folders), (jar, app.name, folders)


# --------------------------------------------------------------------------- tests


def test_every_mode_lands_on_s3_from_the_cluster(
        spark: Any, lake: str, tmp_path: Path, cluster: StandaloneCluster,
        s3_server: S3Server) -> None:
    """A connection with an ``append_dedup`` stream (Spark's MERGE, two checkpoints: the
    second merges into what the first wrote) and a staged ``overwrite`` one lands the source
    on S3 from the cluster.  (``append``, the strictest, is the killed syncs' below; a second
    generation on the cluster, incremental, is ``test_cluster_iceberg_s3``'s; MERGE's
    updates of existing keys are the in-process dedup tests'.)"""
    # Two checkpoints per stream and generation (each a MERGE or a staged file set on S3
    # from the cluster, the slow part): the kill tests below need more, this one does not.
    conn = on_cluster(tmp_path, "append_dedup", cluster, s3_server, name="every-mode",
                      changes={**SOURCE_CHANGES, "orders": 4_000},
                      checkpoint={**CHECKPOINT, "partitions_per_checkpoint": 4})
    streams = [STREAMS["append_dedup"], {"name": "orders", "sync_mode": "full_refresh",
                                         "destination_sync_mode": "overwrite"}]
    result = sync(tmp_path, conn.write(0, streams=streams), *conn._master(), env=DRIVER_ENV)
    assert result.exit_code == 0, result.describe()
    document = result.document
    assert document is not None and document["status"] == "succeeded", result.describe()
    assert SECRET_KEY not in result.stdout + result.stderr
    for stream, writer, why in (("users", WRITER_SPARK, MERGE),
                                ("orders", WRITER_TASKS, TASKS_ON_S3)):
        location = f"s3a://{BUCKET}/{conn.folder}/{stream}"
        assert_table_equals_source(spark, location, conn.source(0), stream)
        assert_each_checkpoint_committed_once(spark, location, tmp_path, document["run_id"],
                                              stream)
        assert_writer(tmp_path, document["run_id"], stream, writer, why)
    partitions = planned_partitions(tmp_path, document["run_id"])
    # Nothing of the tables is on this machine: the bucket holds their logs and files.
    keys = [o["Key"] for o in s3_server.client().list_objects_v2(
        Bucket=lake, Prefix=f"{conn.folder}/")["Contents"]]
    assert any("/_delta_log/" in k for k in keys) and any(k.endswith(".parquet") for k in keys)
    assert not (tmp_path / "lakehouse").exists()
    assert_ran_on_the_cluster(cluster, conn.name)
    # The executors, not the driver, read every partition: one mapInArrow Python task each.
    assert cluster.python_tasks_started(f"headwater-{conn.name}") >= partitions


# The killed syncs run side by side (``_side_by_side``: the first of their tests runs both),
# each application on one of the workers (``spark.cores.max``): a cluster sync spends much
# of its time starting JVMs and waiting on the master, the workers and the 1 s read pauses.


def killed_after_a_commit_then_resumed(spark: Any, tmp_path: Path, cluster: StandaloneCluster,
                                       s3: S3Server) -> None:
    """The third checkpoint's commit is in the table on S3, the store does not know it:
    the resumed run skips it (its tag is in the log), and lands the rest once."""
    conn = on_cluster(tmp_path, "append", cluster, s3, cores=1)
    run_id = crashed_run(conn, conn.sync(fault="after-commit:3"))
    in_delta = set(tagged_commits(spark, conn.location, run_id, STREAM))
    known = set(landed_checkpoints(conn, run_id))
    assert len(in_delta) >= 3 and known < in_delta, (in_delta, known)

    resume(spark, conn, run_id, attempt=2)
    assert_writer(tmp_path, run_id, STREAM, WRITER_TASKS, TASKS_ON_S3)


def an_overwrite_killed_while_reading_then_resumed(spark: Any, tmp_path: Path,
                                                   cluster: StandaloneCluster,
                                                   s3: S3Server) -> None:
    """Killed from outside at an arbitrary moment after the first commit, the driver's whole
    process group with it; the executors on the workers die with their application."""
    conn = on_cluster(tmp_path, "overwrite", cluster, s3, cores=1)
    delay_s = random.Random("cluster-s3-overwrite").uniform(0.0, 2.0)
    result = kill_while_reading(conn, conn.start(), after=1, delay_s=delay_s, whole_group=True)
    run_id = crashed_run(conn, result)

    resume(spark, conn, run_id, attempt=2)
    assert_writer(tmp_path, run_id, STREAM, WRITER_TASKS, TASKS_ON_S3)


SCENARIOS: Scenarios = {
    "test_killed_after_a_commit_then_resumed_on_s3": killed_after_a_commit_then_resumed,
    "test_an_overwrite_killed_while_reading_then_resumed_on_s3":
        an_overwrite_killed_while_reading_then_resumed,
}


@pytest.fixture(scope="module")
def cases(request: pytest.FixtureRequest, spark: Any, tmp_path_factory: pytest.TempPathFactory,
          lake: str, cluster: StandaloneCluster, s3_server: S3Server) -> SideBySide:
    """The module's killed syncs, two at a time, on the run's cluster and S3 server."""
    bound = {name: functools.partial(scenario, cluster=cluster, s3=s3_server)
             for name, scenario in SCENARIOS.items()}
    return side_by_side(request, spark, tmp_path_factory, bound)


def test_killed_after_a_commit_then_resumed_on_s3(cases: SideBySide,
                                                 request: pytest.FixtureRequest,
                                                 cluster: StandaloneCluster) -> None:
    cases.check(request.node.nodeid)
    # Once both cases are done: an application of the other one still starting (the same
    # connection's name) would have fetched no jar yet.
    assert_ran_on_the_cluster(cluster, NAME)


def test_an_overwrite_killed_while_reading_then_resumed_on_s3(
        cases: SideBySide, request: pytest.FixtureRequest) -> None:
    cases.check(request.node.nodeid)
