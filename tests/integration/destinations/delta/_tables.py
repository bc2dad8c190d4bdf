"""The Delta destination's object-store tests' helpers: tables on the run's Azure and GCS
emulators, reached through the Hadoop settings a user sets for Spark's own connectors, and
what every store's tests check of a table (S3's too): its log, its rows, racing committers."""

from __future__ import annotations

import contextlib
import json
import re
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from deltalake import DeltaTable
from pyarrow import fs as pafs

from headwater.destinations._table_files._parquet import ParquetFiles, WrittenFile
from headwater.destinations._table_files._store import TableFolder, store_folder
from headwater.destinations.delta import _delta_rs
from tests.integration._stores import AZURE_ACCOUNT, AZURE_KEY, AzureServer

SCHEMA = pa.schema([pa.field("id", pa.int64()), pa.field("name", pa.string())])
_COMMIT = re.compile(r"/_delta_log/(\d{20})\.json$")


def azure_settings(server: AzureServer, key: str = AZURE_KEY) -> dict[str, str]:
    """hadoop-azure's shared-key setting for the account, and the emulator's endpoint."""
    host = f"{AZURE_ACCOUNT}.dfs.core.windows.net"
    return {f"fs.azure.account.key.{host}": key,
            f"headwater.azure.blob.endpoint.{AZURE_ACCOUNT}": server.blob_endpoint}


def azure_location(container: str, key: str = "lake/t") -> str:
    return f"abfss://{container}@{AZURE_ACCOUNT}.dfs.core.windows.net/{key}"


def new_container(server: AzureServer) -> str:
    return server.container(f"hw-delta-{uuid.uuid4().hex[:12]}")


def azure_table(server: AzureServer, container: str, key: str = "lake/t") -> TableFolder:
    folder = store_folder(azure_location(container, key), azure_settings(server).get)
    assert folder is not None
    return folder


def write(table: TableFolder, ids: list[int]) -> list[WrittenFile]:
    """Upload one Parquet file of ``ids`` to the table's prefix, as a task does."""
    batch = pa.RecordBatch.from_pydict({"id": ids, "name": [f"n{i}" for i in ids]}, SCHEMA)
    writer = ParquetFiles(folder=table.uri, store=table.store, stats_columns=["id"])
    return [WrittenFile(**row) for out in writer.write(iter([batch])) for row in out.to_pylist()]


def rows(table: TableFolder) -> list[int]:
    loaded = DeltaTable(table.uri, storage_options=table.storage_options())
    return sorted(loaded.to_pyarrow_table().column("id").to_pylist())


def log_entries(table: TableFolder) -> dict[int, list[dict[str, Any]]]:
    """Every commit file of the table's log, by version, as its actions (listed on the store)."""
    fs, base = table.filesystem()
    found = {}
    for info in fs.get_file_info(pafs.FileSelector(f"{base}/_delta_log", allow_not_found=True)):
        match = _COMMIT.search("/" + info.path)
        if match:
            text = table.read_text(f"_delta_log/{match.group(1)}.json") or ""
            found[int(match.group(1))] = [json.loads(line) for line in text.splitlines()]
    return found


def txns(entries: dict[int, list[dict[str, Any]]]) -> list[tuple[str, int]]:
    return [(a["txn"]["appId"], a["txn"]["version"]) for actions in entries.values()
            for a in actions if "txn" in a]


def commit_text(tag: str, app_id: str, version: int, added: WrittenFile) -> str:
    """A commit another writer made: ``txn`` (app id, version) adding one file."""
    actions = [
        {"commitInfo": {"timestamp": 1, "operation": "WRITE", "userMetadata": tag,
                        "operationParameters": {"mode": "Append"}}},
        {"txn": {"appId": app_id, "version": version, "lastUpdated": 1}},
        {"add": {"path": added.path, "partitionValues": {}, "size": added.size,
                 "modificationTime": added.modified_ms, "dataChange": True,
                 "stats": added.stats}}]
    return "\n".join(json.dumps(a) for a in actions) + "\n"


def race(table: TableFolder, lanes: int = 3, rounds: int = 3) -> None:
    """Two committers per lane, each checkpoint committed by both at once (two attempts
    of one run); asserts every checkpoint is in the log once, no version is missing or
    overwritten, and the rows are each checkpoint's once."""
    _delta_rs.create_table(table, SCHEMA, {})
    files = {(lane, index): write(table, [lane * 1000 + index * 10 + k for k in range(3)])
             for lane in range(lanes) for index in range(1, rounds + 1)}
    outcomes: list[tuple[str, int, str]] = []
    start = threading.Barrier(lanes * 2)

    def committer(lane: int) -> None:
        start.wait()
        for index in range(1, rounds + 1):
            try:
                done = _delta_rs.commit_files(
                    table, files[(lane, index)], mode="append", app_id=f"lane-{lane}",
                    version=index, tag=json.dumps({"lane": lane, "checkpoint": index}))
                outcomes.append((f"lane-{lane}", index, "made" if done.made else "held"))
            except Exception as exc:  # the same checkpoint's other committer won
                outcomes.append((f"lane-{lane}", index, type(exc).__name__))

    threads = [threading.Thread(target=committer, args=(lane,))
               for lane in range(lanes) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    entries = log_entries(table)
    assert sorted(entries) == list(range(len(entries)))  # no gap, no overwritten version
    committed = Counter(txns(entries))
    expected = {(f"lane-{lane}", index) for lane in range(lanes) for index in range(1, rounds + 1)}
    assert set(committed) == expected and set(committed.values()) == {1}
    made = Counter((app, index) for app, index, what in outcomes if what == "made")
    assert made == Counter({key: 1 for key in expected})
    assert rows(table) == sorted(i for written in files.values() for f in written
                                 for i in range(json.loads(f.stats)["minValues"]["id"],
                                                json.loads(f.stats)["maxValues"]["id"] + 1))


@contextlib.contextmanager
def session_settings(spark: Any, settings: dict[str, str]) -> Iterator[None]:
    """``settings`` in the session's Hadoop configuration while the block runs."""
    conf = spark.sparkContext._jsc.hadoopConfiguration()
    for key, value in settings.items():
        conf.set(key, value)
    try:
        yield
    finally:
        for key in settings:
            conf.unset(key)
