"""Iceberg tables on S3 through a REST catalog: Apache Iceberg's own server, writing to moto.

One REST catalog server for the module (``_rest_catalog.py``), its warehouse in
a bucket of the run's S3-compatible server (moto, 127.0.0.1).  The server
writes each commit's table metadata itself, through Iceberg's ``S3FileIO``
configured with the same store access as the connection's
``spark.hadoop.fs.s3a.*``; the tasks upload the data files with pyarrow and
PyIceberg's S3 FileIO writes the manifests.  So three writers reach one
bucket, and the catalog's compare-and-swap of the metadata pointer (the
server's JDBC catalog) is what keeps commits apart:

* a differential: the same syncs (an incremental append to a partitioned table,
  a full-refresh overwrite staged over several checkpoints) through the REST
  catalog on S3 and through the session's REST catalog on a local warehouse
  hold the same rows, every column, read by PyIceberg and by Spark (``s3a://``);
* two destinations racing ``commit_files`` on one table through the server lose
  nothing and commit no checkpoint twice;
* neither the store's secret key nor the catalog's token shows in a sync's
  ``--json``, a check's, an error, or the log.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from headwater.destinations._base import CommitResult
from headwater.destinations.iceberg import IcebergDestination, _catalog, _markers
from headwater.errors import ExitCode
from tests.integration._cli_logs import invoke_logged
from tests.integration._connections import connection_file, sync
from tests.integration._s3 import SECRET_KEY, S3Server
from tests.integration.destinations.delta._s3 import access, hadoop_settings, new_bucket
from tests.integration.destinations.delta._tables import session_settings
from tests.integration.destinations.iceberg._rest_catalog import (
    RestCatalogServer,
    rest_catalog_server,
)
from tests.integration.destinations.iceberg.test_iceberg_s3 import (
    LANE,
    SCHEMA,
    SOURCE,
    STREAMS,
    assert_same_table,
    frame_of,
    marker,
    plan_of,
    upload,
)

pytestmark = pytest.mark.spark

#: The catalog's bearer token: the server takes any, and it must never show either.
TOKEN = "hw-rest-token-do-not-print"


@dataclass(frozen=True)
class RestOnS3:
    """The module's REST catalog server, its warehouse in ``bucket`` on the S3 server."""

    server: RestCatalogServer
    bucket: str

    @property
    def warehouse(self) -> str:
        return f"s3a://{self.bucket}/warehouse"


@pytest.fixture(scope="module")
def rest_on_s3(spark: Any, s3_server: S3Server,
               tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestOnS3]:
    """A REST catalog server whose warehouse is ``s3://<a new bucket>/warehouse``, written
    with S3FileIO; the session's ``s3a://`` reaches the bucket while the module runs."""
    bucket = new_bucket(s3_server)
    folder = tmp_path_factory.mktemp("iceberg-rest-s3")
    with session_settings(spark, hadoop_settings(s3_server, bucket)), rest_catalog_server(
            folder, f"s3://{bucket}/warehouse", s3=access(s3_server)) as server:
        yield RestOnS3(server=server, bucket=bucket)


def rest_config(uri: str, warehouse: str, namespace: str) -> dict[str, Any]:
    """A REST catalog at ``uri`` (with a token) over ``warehouse``, in ``namespace``."""
    return {"warehouse": warehouse, "namespace": namespace,
            "catalog": {"type": "rest", "uri": uri, "token": TOKEN}}


def reader(uri: str, server: S3Server) -> Any:
    """A REST catalog client of the test's own (its S3 FileIO given the server's keys)."""
    from pyiceberg.catalog import load_catalog

    return load_catalog("reader", type="rest", uri=uri,
                        **_catalog.file_io_properties(access(server)))


def namespace() -> str:
    return f"t_{uuid.uuid4().hex[:12]}"


def test_syncs_through_a_rest_catalog_on_s3_give_the_rows_of_a_local_one(
        spark: Any, s3_server: S3Server, rest_on_s3: RestOnS3,
        iceberg_rest_catalog: RestCatalogServer, tmp_path: Path) -> None:
    configs = {
        "s3": rest_config(rest_on_s3.server.uri, rest_on_s3.warehouse, namespace()),
        "local": rest_config(iceberg_rest_catalog.uri, str(tmp_path / "local" / "warehouse"),
                             namespace())}
    written: dict[str, list[list[int]]] = {}
    outputs = []
    for where, config in configs.items():
        folder = tmp_path / where
        folder.mkdir()
        counts = []
        for generation in (0, 1):
            path = connection_file(
                folder, name="ice-rest", source={**SOURCE, "generation": generation},
                streams=STREAMS, destination={"type": "iceberg", "config": config},
                checkpoint={"partitions_per_checkpoint": 2, "concurrent_checkpoints": 2})
            if where == "s3" and generation == 1:  # the CLI's --json, in this process
                done = invoke_logged(["sync", str(path), "--json"])
                assert done.exit_code == 0, done.output
                outputs.append(done.output)
                document = json.loads(done.stdout)
                counts.append([s["records_written"] for s in document["streams"]])
            else:
                counts.append([s.records_written for s in sync(path).streams])
        written[where] = counts
    assert written["s3"] == written["local"]
    s3_catalog = reader(rest_on_s3.server.uri, s3_server)
    local_catalog = reader(iceberg_rest_catalog.uri, s3_server)
    for stream in ("users", "orders"):
        # The server put each table in its warehouse, and wrote its metadata there.
        assert_same_table(spark, s3_catalog.load_table(f"{configs['s3']['namespace']}.{stream}"),
                          local_catalog.load_table(f"{configs['local']['namespace']}.{stream}"),
                          f"s3://{rest_on_s3.bucket}/warehouse", partitioned=stream == "users")
    orders = s3_catalog.load_table(f"{configs['s3']['namespace']}.orders")
    assert [r for r in orders.metadata.refs if r != "main"] == []  # the staging branch is gone
    # The metadata files the server wrote are in the bucket.
    keys = [o["Key"] for o in s3_server.client().list_objects_v2(
        Bucket=rest_on_s3.bucket, Prefix="warehouse/")["Contents"]]
    assert any(k.endswith(".metadata.json") for k in keys), keys
    for shown in outputs:
        assert SECRET_KEY not in shown and TOKEN not in shown


@dataclass(frozen=True)
class SimpleCheckpoint:
    """The one field of a checkpoint plan ``commit_files`` reads."""

    index: int


def test_two_committers_racing_through_a_rest_catalog_on_s3_lose_and_double_nothing(
        spark: Any, s3_server: S3Server, rest_on_s3: RestOnS3) -> None:
    """Two lanes of three checkpoints; each checkpoint committed at once by two
    destinations, each with its own REST client and lock, so only the server's
    compare-and-swap of the metadata pointer keeps them apart."""
    config = rest_config(rest_on_s3.server.uri, rest_on_s3.warehouse, namespace())
    first, second = IcebergDestination(config), IcebergDestination(config)
    catalog = first.catalog()
    _catalog.ensure_namespace(catalog, config["namespace"])
    table_name = f"{config['namespace']}.users"
    _catalog.with_name_mapping(catalog.create_table(table_name, schema=SCHEMA))
    checkpoints = {lane: [lane * 10 + r for r in range(1, 4)] for lane in range(2)}
    frames = {(index, who): frame_of(spark, upload(d, [index * 10 + k for k in range(4)]))
              for indices in checkpoints.values() for index in indices
              for who, d in enumerate((first, second))}
    results: list[tuple[int, CommitResult | BaseException]] = []
    start = threading.Barrier(len(checkpoints) * 2)

    def committer(lane: int, who: int) -> None:
        start.wait()
        for index in checkpoints[lane]:
            try:
                results.append((index, (first, second)[who].commit_files(
                    spark, plan_of(), SimpleCheckpoint(index),  # type: ignore[arg-type]
                    frames[(index, who)], marker(lane, index))))
            except BaseException as exc:
                results.append((index, exc))

    pairs = [(lane, who) for lane in checkpoints for who in (0, 1)]
    with ThreadPoolExecutor(len(pairs)) as pool:
        list(pool.map(lambda pair: committer(*pair), pairs))
    assert not [r for r in results if isinstance(r[1], BaseException)], results
    table = reader(rest_on_s3.server.uri, s3_server).load_table(table_name)
    tags = Counter((s.summary.additional_properties.get(_markers.APP_ID_KEY),
                    s.summary.additional_properties.get(_markers.VERSION_KEY))
                   for s in table.snapshots() if s.summary is not None)
    tags.pop((None, None), None)  # the name mapping's commit carries no marker
    assert tags == {(f"{LANE}/{lane}", str(index)): 1
                    for lane, indices in checkpoints.items() for index in indices}
    # Both committers of a checkpoint report the one snapshot that holds it.
    versions: dict[int, set[int | None]] = {}
    for index, done in results:
        assert isinstance(done, CommitResult)
        versions.setdefault(index, set()).add(done.version)
    assert all(len(v) == 1 and None not in v for v in versions.values()), versions
    assert sorted(table.scan().to_arrow().column("id").to_pylist()) == sorted(
        index * 10 + k for indices in checkpoints.values() for index in indices
        for k in range(4))


def test_check_through_a_rest_catalog_on_s3_shows_no_secret(
        s3_server: S3Server, rest_on_s3: RestOnS3, tmp_path: Path) -> None:
    """``check`` (no Spark: the store access comes from the connection's
    ``spark.hadoop.fs.s3a.*``) passes on the server's bucket, and fails on a missing one
    naming it; the secret key and the token show in neither."""
    outputs = []
    for warehouse, code in ((rest_on_s3.warehouse, 0),
                            ("s3a://hw-no-such-bucket/warehouse", ExitCode.FAILED)):
        file = tmp_path / "icecheck.yaml"
        file.write_text(json.dumps({  # JSON is YAML
            "name": "icecheck", "source": {"type": "sample", "config": {"users": 10}},
            "destination": {"type": "iceberg", "config": rest_config(
                rest_on_s3.server.uri, warehouse, namespace())},
            "spark": {"conf": s3_server.spark_conf()}}))
        done = invoke_logged(["check", str(file), "--json"])
        assert done.exit_code == code, done.output
        outputs.append(done.output)
        destination = json.loads(done.stdout)["destination"]
        if code:
            assert "the bucket hw-no-such-bucket" in destination["error"]["message"]
        else:
            assert destination == {"type": "iceberg", "status": "succeeded"}
    for shown in outputs:
        assert SECRET_KEY not in shown and TOKEN not in shown
