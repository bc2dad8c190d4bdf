"""The same connection file runs on Spark Connect and under spark-submit, unchanged.

``--remote sc://...`` drives a separate Spark Connect server over gRPC: every
read, write, MERGE and history query of the sync goes through Connect, and the
second sync must pick up exactly the source's changes from the state the first
one left.  Under ``spark-submit`` the sync uses the session spark-submit
started, with the master and jars of its flags.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from headwater.metadata_store import MetadataStore
from tests.integration._cli import (
    SYNC_TIMEOUT_S,
    assert_appended_history,
    assert_each_checkpoint_committed_once,
    assert_table_equals_source,
    cli_env,
    sync,
    table_location,
    write_connection,
)
from tests.integration._connect import SPARK_SUBMIT, connect_server, spark_submit_args

pytestmark = [pytest.mark.cluster, pytest.mark.spark]

SOURCE: dict[str, Any] = {"seed": 9, "users": 3_000, "orders": 4_000,
                          "rows_per_partition": 1_000, "generation": 0}
STREAMS: list[dict[str, Any]] = [
    {"name": "users", "sync_mode": "incremental", "destination_sync_mode": "append_dedup",
     "cursor_field": "updated_at", "primary_key": ["id"]},
    {"name": "orders", "sync_mode": "incremental", "destination_sync_mode": "append",
     "cursor_field": "updated_at", "primary_key": ["id"]},
]
CHECKPOINT = {"partitions_per_checkpoint": 2, "concurrent_checkpoints": 2}


@pytest.fixture(scope="module")
def remote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One Connect server for the module's tests (each starts a JVM: about half a minute)."""
    with connect_server(tmp_path_factory.mktemp("connect")) as url:
        yield url


def _succeeded(document: dict[str, Any] | None, describe: str) -> dict[str, Any]:
    assert document is not None, describe
    assert document["status"] == "succeeded", describe
    return document


def test_incremental_syncs_through_spark_connect(spark: Any, tmp_path: Path, remote: str) -> None:
    before = dict(SOURCE)
    connection = write_connection(tmp_path, name="via-connect", source=before, streams=STREAMS,
                                  checkpoint=CHECKPOINT)
    first = sync(tmp_path, connection, "--remote", remote)
    assert first.exit_code == 0, first.describe()
    first_doc = _succeeded(first.document, first.describe())

    after = {**SOURCE, "generation": 1}
    write_connection(tmp_path, name="via-connect", source=after, streams=STREAMS,
                     checkpoint=CHECKPOINT)
    second = sync(tmp_path, connection, "--remote", remote)
    assert second.exit_code == 0, second.describe()
    second_doc = _succeeded(second.document, second.describe())

    assert_table_equals_source(spark, table_location(tmp_path, "users"), after, "users")
    assert_appended_history(spark, table_location(tmp_path, "orders"), before, after, "orders")
    for document in (first_doc, second_doc):
        for stream in ("users", "orders"):
            assert_each_checkpoint_committed_once(spark, table_location(tmp_path, stream),
                                                  tmp_path, document["run_id"], stream)
    # The second sync read only what generation 1 changed, not the whole source again.
    read = {s["name"]: s["records_read"] for s in second_doc["streams"]}
    assert 0 < read["users"] < SOURCE["users"]
    assert 0 < read["orders"] < SOURCE["orders"]


def test_a_connectors_own_state_is_released_through_spark_connect(
        spark: Any, tmp_path: Path, remote: str) -> None:
    """Without accumulators, an Airbyte connector's state rides in the rows (staged once):
    the next sync starts after it and reads each record exactly once."""
    from tests.integration.connectors.airbyte.test_airbyte_source_sync import (
        FAKE_CONNECTOR,
        ids,
    )
    from tests.integration.connectors.airbyte.test_airbyte_source_sync import (
        write_connection as write_airbyte_connection,
    )

    streams = [{"name": "items", "sync_mode": "incremental", "destination_sync_mode": "append"}]

    def connection(records: int) -> Path:
        return write_airbyte_connection(
            tmp_path, {"command": [sys.executable, str(FAKE_CONNECTOR)],
                       "config": {"state_every": 10, "records": records}}, streams)

    for records in (30, 45):
        done = sync(tmp_path, connection(records), "--remote", remote)
        assert done.exit_code == 0, done.describe()
        _succeeded(done.document, done.describe())
    assert ids(spark, tmp_path, "items") == Counter(range(1, 46))
    with MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}") as store:
        assert store.get_state("ab", "items") == {"cursor": 45}


def test_sync_under_spark_submit(spark: Any, tmp_path: Path) -> None:
    import headwater.__main__ as entry

    connection = write_connection(tmp_path, name="via-submit", source=SOURCE, streams=STREAMS,
                                  checkpoint=CHECKPOINT)
    completed = subprocess.run(
        [SPARK_SUBMIT, *spark_submit_args("local[2]"), str(entry.__file__),
         "sync", str(connection), "--json"],
        cwd=tmp_path, env=cli_env(tmp_path), stdin=subprocess.DEVNULL, capture_output=True,
        text=True, timeout=SYNC_TIMEOUT_S,
    )
    describe = (f"exit code {completed.returncode}\n{completed.stdout[-3000:]}\n"
                f"{completed.stderr[-3000:]}")
    assert completed.returncode == 0, describe
    # spark-submit's own Ivy report may precede the document on stdout.
    document = json.loads(completed.stdout[completed.stdout.index("{\n"):])
    _succeeded(document, describe)
    for stream in ("users", "orders"):
        assert_table_equals_source(spark, table_location(tmp_path, stream), SOURCE, stream)
