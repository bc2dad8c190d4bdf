"""SIGKILL a sync writing Delta on S3 through the task path; one more sync lands every row once.

The crash tests' guarantee (``tests/integration/test_crash_resume.py``) on a
table in a bucket of the run's S3-compatible server: the CLI, in a process of
its own with the store's settings in the connection's ``spark.conf`` only, is
killed after a checkpoint's commit and before its state is saved, or inside
the destination once the commit is durable; the next ``sync`` resumes the run,
finds on S3 what the killed attempt committed, by its commit markers, before
reading it again (the run records which checkpoints it found), and the table
then holds the source exactly, each checkpoint committed once.  The secret key
never shows in the CLI's output or the run history.
"""

from __future__ import annotations

import json
import signal
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from tests.integration._cli import (
    FAULT,
    assert_each_checkpoint_committed_once,
    assert_found_committed,
    assert_table_equals_source,
    store,
    sync,
    sync_runs,
    tagged_commits,
)
from tests.integration._connections import connection_file
from tests.integration._s3 import SECRET_KEY, S3Server
from tests.integration._side_by_side import SideBySide, side_by_side
from tests.integration.destinations.delta._s3 import hadoop_settings, new_bucket

pytestmark = [pytest.mark.crash, pytest.mark.spark]

NAME, STREAM = "s3crash", "users"
SOURCE = {"seed": 3, "users": 4_000, "orders": 0, "rows_per_partition": 500}
STREAMS = {
    "append": {"name": STREAM, "sync_mode": "incremental", "destination_sync_mode": "append",
               "cursor_field": "updated_at"},
    "overwrite": {"name": STREAM, "sync_mode": "full_refresh",
                  "destination_sync_mode": "overwrite"},
}


def killed_on_s3_then_resumed(spark: Any, tmp_path: Path, s3_server: S3Server, s3_bucket: str,
                              mode: str, fault: str) -> None:
    """The case of one ``mode`` and ``fault``, in ``s3_bucket`` (its own)."""
    conf = {f"spark.hadoop.{k}": v for k, v in hadoop_settings(s3_server, s3_bucket).items()}
    connection = connection_file(
        tmp_path, name=NAME, source=SOURCE, streams=[STREAMS[mode]],
        lake=f"s3a://{s3_bucket}/lake", store_file=None,
        checkpoint={"partitions_per_checkpoint": 2, "concurrent_checkpoints": 2},
        spark={"conf": conf})
    killed = sync(tmp_path, connection, env={FAULT: fault})
    assert killed.exit_code == -signal.SIGKILL, killed.describe()
    run = store(tmp_path).find_unfinished_run(NAME)
    assert run is not None
    location = f"s3a://{s3_bucket}/lake/{STREAM}"
    # What the killed attempt committed (an overwrite: staged) and did not release: the
    # resumed attempt must find each by its marker before reading it.  Delta's txn pair
    # would keep each out of the table too, but only after reading it again.
    landed = (staged_on_s3(s3_server, s3_bucket, run.run_id) if mode == "overwrite"
              else set(tagged_commits(spark, location, run.run_id, STREAM)))
    unreleased = landed - store(tmp_path).released_indices(run.run_id, STREAM)
    assert unreleased, f"the kill should leave a commit unreleased: {landed}"

    result = sync(tmp_path, connection)
    assert result.exit_code == 0, result.describe()
    resumed = sync_runs(result)[0]
    assert (resumed["run_id"], resumed["status"], resumed["attempt"]) == (
        run.run_id, "succeeded", 2)
    assert_table_equals_source(spark, location, SOURCE, STREAM)
    assert_each_checkpoint_committed_once(spark, location, tmp_path, run.run_id, STREAM)
    assert_found_committed(tmp_path, run.run_id, STREAM, unreleased)
    checkpoints = store(tmp_path).list_checkpoints(run.run_id)
    assert {c.stats.get("writer") for c in checkpoints} == {"tasks+delta-rs"}, [
        c.stats for c in checkpoints]
    history = json.dumps(asdict(store(tmp_path).get_run(run.run_id)), default=str)  # type: ignore[arg-type]
    for text in (killed.stdout, killed.stderr, result.stdout, result.stderr, history):
        assert SECRET_KEY not in text


def staged_on_s3(s3_server: S3Server, bucket: str, run_id: str) -> set[int]:
    """The checkpoints of an overwrite run staged in ``bucket``: their manifests' indices."""
    prefix = f"lake/{STREAM}/_headwater_staging/{run_id}/"
    listed = s3_server.client().list_objects_v2(Bucket=bucket, Prefix=prefix)
    return {int(Path(item["Key"]).stem) for item in listed.get("Contents", [])
            if item["Key"].endswith(".json")}


@pytest.fixture(scope="module")
def cases(request: pytest.FixtureRequest, spark: Any, s3_server: S3Server,
          tmp_path_factory: pytest.TempPathFactory) -> SideBySide:
    """The cases, two at a time (``_side_by_side``), each in a bucket of its own."""
    def case(spark: Any, tmp_path: Path, mode: str, fault: str) -> None:
        # The ``s3_bucket`` fixture's work, for one case: the session reaches the bucket
        # through per-bucket settings, unset afterwards.
        bucket = new_bucket(s3_server)
        settings = hadoop_settings(s3_server, bucket)
        configuration = spark.sparkContext._jsc.hadoopConfiguration()
        for key, value in settings.items():
            configuration.set(key, value)
        try:
            killed_on_s3_then_resumed(spark, tmp_path, s3_server, bucket, mode, fault)
        finally:
            for key in settings:
                configuration.unset(key)

    return side_by_side(request, spark, tmp_path_factory, {
        "test_a_sync_killed_on_s3_is_resumed_by_the_next_one_and_lands_every_row_once": case})


#: ``append`` killed after a whole commit (``after-commit``) on S3 is the cluster's case
#: (``test_cluster_s3``: the same store, the executors writing): here the kill inside the
#: destination once the commit is durable, and a staged overwrite's.
@pytest.mark.parametrize(("mode", "fault"), [("append", "commit-landed:2"),
                                             ("overwrite", "after-commit:2")])
def test_a_sync_killed_on_s3_is_resumed_by_the_next_one_and_lands_every_row_once(
        cases: SideBySide, request: pytest.FixtureRequest, mode: str, fault: str) -> None:
    cases.check(request.node.nodeid)
