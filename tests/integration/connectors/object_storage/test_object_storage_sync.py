"""The object storage source end to end: moto's S3 server and local folders into Delta.

In-process syncs share the suite's Spark session; the crash and ``--watch``
tests run the real CLI (a SIGKILL must hit a whole sync, a watcher must be
signalled like a user's); the sync resuming a killed one runs the CLI's command
in this process (``_in_process``: nothing is killed there).  Data are small: the
cost is Spark's per-job overhead.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from headwater.config import load_connection
from headwater.engine import SyncEngine, SyncResult, build_source
from headwater.metadata_store import MetadataStore
from tests.integration._cli import (
    HOME,
    LAKEHOUSE,
    SYNC_TIMEOUT_S,
    kill_cli,
    start_cli,
    store,
    sync,
    sync_runs,
    tagged_commits,
    wait_for_group_exit,
)
from tests.integration._connections import connection_file
from tests.integration._in_process import sync_in_process
from tests.integration.connectors.object_storage.conftest import SECRET_KEY, S3Server
from tests.unit.connectors.object_storage.conftest import COMPRESSORS, ROWS, encode

pytestmark = pytest.mark.spark

SUFFIX = {"csv": ".csv", "jsonl": ".jsonl", "parquet": ".parquet", "avro": ".avro"}


def connection(tmp_path: Path, source: dict[str, Any], streams: list[str],
               name: str = "objects", checkpoint: dict[str, Any] | None = None) -> Path:
    return connection_file(
        tmp_path, name=name, source_type="object_storage", source=source,
        streams=[{"name": s, "sync_mode": "incremental", "destination_sync_mode": "append"}
                 for s in streams],
        lake=str(tmp_path / LAKEHOUSE), store_file=f"{HOME}/headwater.db",
        checkpoint=checkpoint or None)


def run(path: Path) -> SyncResult:
    config = load_connection(path)
    return SyncEngine(config, MetadataStore(config.metadata_store or "")).run()


def rows(spark: Any, tmp_path: Path, stream: str) -> list[dict[str, Any]]:
    return [r.asDict() for r in spark.read.format("delta")
            .load(str(tmp_path / LAKEHOUSE / stream)).collect()]


def test_s3_every_format_and_compression_then_only_new_objects(
        spark: Any, tmp_path: Path, s3_server: S3Server) -> None:
    s3 = s3_server.client()
    s3.create_bucket(Bucket="landing")
    for fmt, suffix in SUFFIX.items():
        for compression, compress in COMPRESSORS.items():
            s3.put_object(Bucket="landing", Key=f"{fmt}/day1{suffix}{compression}",
                          Body=compress(encode(ROWS, fmt)))
    source = s3_server.source_config("landing", streams=[
        {"name": fmt, "globs": [f"{fmt}/*"], "format": {"type": fmt}} for fmt in SUFFIX])
    path = connection(tmp_path, source, list(SUFFIX))
    first = run(path)
    assert first.status == "succeeded", first.to_dict()
    for stats in first.streams:
        assert (stats.records_read, stats.records_rejected) == (4 * len(ROWS), 0), stats
    types: dict[str, str] = {}
    for fmt in SUFFIX:
        frame = spark.read.format("delta").load(str(tmp_path / LAKEHOUSE / fmt))
        types = dict(frame.dtypes)
        assert (types["id"], types["amount"], types["active"], types["at"]) == \
            ("bigint", "double", "boolean", "timestamp"), (fmt, types)
        got = sorted((r["_source_key"], r["_source_record"], r["id"], r["name"])
                     for r in frame.collect())
        want = sorted((f"{fmt}/day1{SUFFIX[fmt]}{c}", i, r["id"], r["name"])
                      for c in COMPRESSORS for i, r in enumerate(ROWS))
        assert got == want
    # secrets never reach the run history
    history = json.dumps(MetadataStore(load_connection(path).metadata_store or "")
                         .get_run(first.run_id).__dict__, default=str)
    assert SECRET_KEY not in history

    s3.put_object(Bucket="landing", Key="jsonl/day2.jsonl", Body=encode(ROWS[:5], "jsonl"))
    s3.put_object(Bucket="landing", Key="csv/day0-late.csv", Body=encode(ROWS[:3], "csv"))
    second = run(path)
    read = {s.name: s.records_read for s in second.streams}
    assert read == {"csv": 3, "jsonl": 5, "parquet": 0, "avro": 0}
    assert len(rows(spark, tmp_path, "jsonl")) == 4 * len(ROWS) + 5
    third = run(path)
    assert sum(s.records_read for s in third.streams) == 0


def test_malformed_corpus_syncs_with_exact_reject_counts(spark: Any, tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    good = encode(ROWS[:4], "jsonl")
    (folder / "a.jsonl").write_bytes(good)
    (folder / "b.jsonl").write_bytes(b'{"id": 1, "name": "x"\n[1]\n{"id": "one"}\n'
                                     b'{"name": "\xff"}\n' + good)
    (folder / "c.jsonl").write_bytes(b"")
    (folder / "d.jsonl.gz").write_bytes(gzip.compress(good * 100)[:-25])
    (folder / "e.csv").write_bytes(b"id,name\n1,a\n2,b,c\n3\n4,d\n")
    (folder / "f.csv").write_bytes(b"id,name\n1,\xff\n")
    source = {"url": str(folder), "streams": [
        {"name": "lines", "globs": ["*.jsonl*"], "schema": {"id": {"type": "integer"}}},
        {"name": "table", "globs": ["*.csv"], "format": {"type": "csv"}}]}
    result = run(connection(tmp_path, source, ["lines", "table"]))
    assert result.status == "succeeded", result.to_dict()
    stats = {s.name: s for s in result.streams}
    lines = rows(spark, tmp_path, "lines")
    truncated = [r for r in lines if r["_source_key"] == "d.jsonl.gz"]
    # b: 4 bad lines; d: one row for the damage; e: 2 ragged rows; f: 1 bad UTF-8 value
    assert stats["lines"].records_rejected == 4 + 1
    assert stats["table"].records_rejected == 2 + 1
    assert stats["lines"].records_read == 4 + (4 + 4) + len(truncated)
    assert sorted(r["_source_record"] for r in lines
                  if r["_source_key"] == "b.jsonl" and r["_hw_notes"]) == [0, 1, 2, 3]
    damaged = [r for r in truncated if r["_hw_notes"]]
    assert len(damaged) == 1 and "unreadable" in damaged[0]["_hw_notes"][0]["reason"]


@pytest.mark.crash
def test_sigkill_in_a_large_object_then_resume_lands_every_record_once(
        tmp_path: Path, spark: Any) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    records = 30_000
    lines = [json.dumps({"id": i, "payload": f"p{i:06d}"}) + "\n" for i in range(records)]
    (folder / "big.jsonl").write_text("".join(lines))
    size = (folder / "big.jsonl").stat().st_size
    source = {"url": str(folder), "streams": [
        {"name": "big", "globs": ["*.jsonl"], "split_bytes": size // 6 + 1}]}
    path = connection(tmp_path, source, ["big"], name="crashy",
                      checkpoint={"partitions_per_checkpoint": 1, "concurrent_checkpoints": 1})
    killed = sync(tmp_path, path, env={"HEADWATER_FAULT": "after-release:3"})
    assert killed.exit_code == -signal.SIGKILL, killed.describe()
    state = store(tmp_path).get_state("crashy", "big")
    assert state is not None
    flight = state["in_flight"]["big.jsonl"]
    assert flight["unit"] == "bytes" and flight["total"] == size
    assert flight["done"] == [[0, flight["done"][0][1]]] and 0 < flight["done"][0][1] < size
    # An object lands before the next sync: the same sync finishes the killed run's
    # plan (big.jsonl only), then reads the new object in a run of its own.
    arrived = 100
    (folder / "new.jsonl").write_text("".join(
        json.dumps({"id": i, "payload": f"p{i:06d}"}) + "\n"
        for i in range(records, records + arrived)))
    result = sync_in_process(tmp_path, path)
    assert result.exit_code == 0, result.describe()
    resumed, new = sync_runs(result)
    assert resumed["resumed"] is True and resumed["status"] == "succeeded"
    assert new["resumed"] is False and new["status"] == "succeeded"
    assert new["streams"][0]["records_written"] == arrived
    landed = rows(spark, tmp_path, "big")
    ids = sorted(r["id"] for r in landed)
    assert ids == list(range(records + arrived)), "every record exactly once"
    assert sorted(r["_source_record"] for r in landed
                  if r["_source_key"] == "big.jsonl") == list(range(records))
    final = store(tmp_path).get_state("crashy", "big")
    assert final["in_flight"] == {} and {"big.jsonl", "new.jsonl"} <= set(final["recent"])


def test_watch_picks_up_new_objects_and_stops_on_sigterm(tmp_path: Path, spark: Any) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "001.jsonl").write_bytes(encode(ROWS[:3], "jsonl"))
    source = {"url": str(folder), "streams": [{"name": "events", "globs": ["*.jsonl"]}]}
    path = connection(tmp_path, source, ["events"], name="watched")
    process = start_cli(tmp_path, "sync", str(path), "--watch", "--json")
    assert process.stdout is not None
    try:
        first = json.loads(process.stdout.readline())
        assert first["streams"][0]["records_read"] == 3, first
        (folder / "002.jsonl").write_bytes(encode(ROWS[3:10], "jsonl"))
        second = json.loads(process.stdout.readline())
        assert second["streams"][0]["records_read"] == 7, second
        time.sleep(1.0)
        os.kill(process.pid, signal.SIGTERM)
        process.wait(timeout=120)
    except BaseException:
        kill_cli(process, whole_group=True)
        raise
    assert process.returncode == 0, process.stderr.read() if process.stderr else ""
    assert sorted(r["id"] for r in rows(spark, tmp_path, "events")) == list(range(10))


def wait_for_stderr(process: subprocess.Popen[str],
                    pattern: str) -> tuple[threading.Event, list[str]]:
    """Drain the CLI's stderr on a thread; the event is set once a line matches ``pattern``."""
    seen = threading.Event()
    lines: list[str] = []

    def drain() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            if re.search(pattern, line):
                seen.set()

    threading.Thread(target=drain, daemon=True).start()
    return seen, lines


def test_ctrl_c_stops_watch_after_the_commit_in_progress_and_the_next_sync_finishes(
        tmp_path: Path, spark: Any) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    keys = [f"{n:03d}.jsonl" for n in range(4)]
    for n, key in enumerate(keys):
        (folder / key).write_bytes(encode(ROWS[3 * n:3 * n + 3], "jsonl"))
    # one object per partition and checkpoint, so the stop falls between objects
    source = {"url": str(folder), "streams": [{"name": "events", "globs": ["*.jsonl"],
                                               "objects_per_partition": 1}]}
    path = connection(tmp_path, source, ["events"], name="interrupted",
                      checkpoint={"partitions_per_checkpoint": 1, "concurrent_checkpoints": 1})
    process = start_cli(tmp_path, "sync", str(path), "--watch", "--json", "-v")
    committed_line, stderr = wait_for_stderr(process, r"stream events checkpoint \d+: \d+ rows")
    try:
        assert committed_line.wait(SYNC_TIMEOUT_S), "".join(stderr[-40:])
        # A terminal's Ctrl-C goes to the whole foreground process group: driver and JVM.
        os.killpg(process.pid, signal.SIGINT)
        assert process.stdout is not None
        report = process.stdout.read()
        process.wait(timeout=SYNC_TIMEOUT_S)
        wait_for_group_exit(process.pid)
    except BaseException:
        kill_cli(process, whole_group=True)
        raise
    log = "".join(stderr)
    assert process.returncode == 130, f"exit code {process.returncode}\n{log[-4000:]}"
    [document] = [json.loads(line) for line in report.splitlines() if line.strip()]
    [events] = document["streams"]
    assert document["status"] == "stopped", document
    assert "SIGINT received" in document["stop_reason"]
    done = events["checkpoints_done"]
    assert 1 <= done < events["checkpoints"] == len(keys), document

    # Exactly the committed checkpoints' objects are in the table, each record once...
    landed = sorted((r["_source_key"], r["_source_record"]) for r in rows(spark, tmp_path,
                                                                          "events"))
    assert landed == [(key, i) for key in keys[:done] for i in range(3)]
    # ...the state says so (planned from it, a sync reads exactly the other objects)...
    config = load_connection(path)
    state = store(tmp_path).get_state("interrupted", "events")
    stream = build_source(config).stream("events")
    assert [p.params["key"] for p in stream.partitions(state)] == keys[done:]
    run_record = store(tmp_path).get_run(document["run_id"])
    assert run_record is not None and run_record.status == "stopped"

    # ...and the next sync continues the same run and lands the rest exactly once.
    resumed = run(path)
    assert (resumed.status, resumed.resumed, resumed.run_id) == \
        ("succeeded", True, document["run_id"]), resumed.to_dict()
    assert sorted(r["id"] for r in rows(spark, tmp_path, "events")) == list(range(3 * len(keys)))
    commits = tagged_commits(spark, str(tmp_path / LAKEHOUSE / "events"), resumed.run_id,
                             "events")
    assert len(commits) == len(keys) and set(commits.values()) == {1}, commits
