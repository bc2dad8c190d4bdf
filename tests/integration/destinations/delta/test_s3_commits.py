"""The task path on S3: files the tasks upload, committed by delta-rs with conditional writes.

Against moto's S3 server on 127.0.0.1 (through a recording proxy where a test
needs to see or bend the requests): the files land under the table's prefix,
the commit of version N is a put of ``_delta_log/N.json`` with
``If-None-Match: *``, a rival commit that took N first is never overwritten
(the commit goes to N+1, or fails when the rival is the same checkpoint), and
committers racing on one table lose no commit and commit no checkpoint twice.
"""

from __future__ import annotations

import json
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from headwater.destinations._table_files._parquet import WrittenFile
from headwater.destinations.delta import _delta_rs, _staging
from tests.integration._s3 import S3Server
from tests.integration.destinations.delta._s3 import new_bucket, read, s3_table
from tests.integration.destinations.delta._s3_proxy import COMMIT_PATH, Proxy
from tests.integration.destinations.delta._tables import (
    SCHEMA,
    commit_text,
    race,
    rows,
    txns,
    write,
)


def log_entries(server: S3Server, bucket: str,
                key: str = "lake/t") -> dict[int, list[dict[str, Any]]]:
    """Every commit file of the table's log, by version, as its actions."""
    listed = server.client().list_objects_v2(Bucket=bucket, Prefix=f"{key}/_delta_log/")
    found = {}
    for item in listed.get("Contents", []):
        match = COMMIT_PATH.search("/" + item["Key"])
        if match:
            text = read(server, bucket, item["Key"]) or b""
            found[int(match.group(1))] = [json.loads(line) for line in text.splitlines()]
    return found


def test_files_land_on_s3_and_commit_once(s3_server: S3Server) -> None:
    bucket = new_bucket(s3_server)
    table = s3_table(s3_server, bucket)
    _delta_rs.create_table(table, SCHEMA, {})
    written = write(table, [1, 2, 3])
    assert written[0].size > 0 and written[0].rows == 3
    assert read(s3_server, bucket, f"lake/t/{written[0].path}") is not None
    first = _delta_rs.commit_files(table, written, mode="append", app_id="a", version=1, tag="{}")
    again = _delta_rs.commit_files(table, written, mode="append", app_id="a", version=1, tag="{}")
    assert (first.made, first.version) == (True, 1)
    assert (again.made, again.held) == (False, 1)
    assert rows(table) == [1, 2, 3]
    assert _delta_rs.transaction_version(table, "a") == 1
    assert [c["version"] for c in _delta_rs.history(table) or []] == [1, 0]


def rival_takes_version_1(proxy: Proxy, app_id: str, txn_version: int,
                          added: WrittenFile) -> None:
    """Before the proxy forwards the first put of commit 1, a rival's commit 1 lands."""
    proxy.rival(f"/_delta_log/{1:020d}.json", commit_text("rival", app_id, txn_version, added))


def test_a_commit_is_a_conditional_put_and_a_rival_that_took_its_version_stays(
        s3_server: S3Server, s3_proxy: Proxy) -> None:
    """Another writer's commit lands on version 1 between delta-rs's read and its put."""
    bucket = new_bucket(s3_server)
    table = s3_table(s3_server, bucket, endpoint=s3_proxy.endpoint)
    _delta_rs.create_table(table, SCHEMA, {})
    direct = s3_table(s3_server, bucket)  # the proxy is for the log's requests
    rival_takes_version_1(s3_proxy, "other-app", 7, write(direct, [10])[0])
    committed = _delta_rs.commit_files(table, write(direct, [20]), mode="append",
                                       app_id="ours", version=1, tag="{}")
    assert (committed.made, committed.version) == (True, 2)
    puts = s3_proxy.puts_of_commits()
    assert [r["path"].rsplit("/", 1)[1] for r in puts] == [
        f"{0:020d}.json", f"{1:020d}.json", f"{2:020d}.json"]
    assert all({k.lower(): v for k, v in r["headers"].items()}.get("if-none-match") == "*"
               for r in puts)
    assert [r["status"] for r in puts] == [200, 412, 200]
    entries = log_entries(s3_server, bucket)
    assert entries[1][0]["commitInfo"]["userMetadata"] == "rival"  # not overwritten
    assert rows(direct) == [10, 20]


def test_a_rival_commit_of_the_same_checkpoint_makes_the_commit_fail_not_double(
        s3_server: S3Server, s3_proxy: Proxy) -> None:
    bucket = new_bucket(s3_server)
    table = s3_table(s3_server, bucket, endpoint=s3_proxy.endpoint)
    _delta_rs.create_table(table, SCHEMA, {})
    direct = s3_table(s3_server, bucket)
    rival_takes_version_1(s3_proxy, "app", 1, write(direct, [1, 2])[0])
    with pytest.raises(Exception, match=r"(?i)concurrent"):
        _delta_rs.commit_files(table, write(direct, [1, 2]), mode="append", app_id="app",
                               version=1, tag="{}")
    assert sorted(log_entries(s3_server, bucket)) == [0, 1]
    assert rows(direct) == [1, 2]
    assert txns(log_entries(s3_server, bucket)) == [("app", 1)]


def test_committers_racing_on_one_table_lose_no_commit_and_double_no_checkpoint(
        s3_server: S3Server) -> None:
    """Six threads, each its own ``DeltaTable``: three lanes, each checkpoint committed by two.

    Lanes ``lane-0..2`` commit checkpoints 1..3; every checkpoint is committed by
    two threads at once (the same files, as two attempts of one run would).
    Whatever the interleaving: every checkpoint is in the log exactly once, the
    versions run 0..n without a gap, and the rows are each checkpoint's once (``race``).
    """
    race(s3_table(s3_server, new_bucket(s3_server)))


def test_a_manifest_is_staged_on_s3_and_its_files_checked(s3_server: S3Server) -> None:
    bucket = new_bucket(s3_server)
    table = s3_table(s3_server, bucket)
    written = write(table, [1, 2])
    manifest = _staging.Manifest(run_id="r1", stream="t", checkpoint=4, files=tuple(written))
    _staging.write_manifest(table, manifest)
    assert _staging.read_manifest(table, "r1", 4) == manifest
    assert _staging.read_manifest(table, "r1", 5) is None
    assert _staging.missing_files(table, [manifest]) == []
    s3_server.client().delete_object(Bucket=bucket, Key=f"lake/t/{written[0].path}")
    assert _staging.missing_files(table, [manifest]) == [written[0].path]
    assert table.has_folder("_headwater_staging/r1")
    _staging._remove_in(table.child("_headwater_staging"), run_id=None, keep_run_id="r2")
    assert not table.has_folder("_headwater_staging/r1")


def test_creators_racing_on_one_table_all_get_it_from_one_create_commit(
        s3_server: S3Server) -> None:
    """Four creators of one new table at once each get the same table, created once.

    Version 0 is committed without delta-rs's retry: a creator whose put of it
    is refused adopts the winner's table (the same schema), instead of committing
    its create again as version 1 (a new table id, which readers that track the
    table take for a replaced one).  No data is involved (Headwater creates a
    stream's table once, in ``prepare``, so only two processes preparing one new
    table can race).
    """
    bucket = new_bucket(s3_server)
    table = s3_table(s3_server, bucket)
    start = threading.Barrier(4)

    def create(_: int) -> _delta_rs.TableState:
        start.wait()
        return _delta_rs.create_table(table, SCHEMA, {})

    with ThreadPoolExecutor(4) as pool:
        states = list(pool.map(create, range(4)))
    assert all(state == states[0] for state in states)
    entries = log_entries(s3_server, bucket)
    assert list(entries) == [0]  # one create commit: one table id
    assert {"protocol", "metaData"} <= {k for a in entries[0] for k in a}
