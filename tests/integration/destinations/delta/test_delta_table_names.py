"""Delta tables by name: each stream's table registered in the session's catalog.

In the shared session (its in-memory catalog) a synced table answers
``spark.table("raw.hw_users")`` whichever writer wrote it.  With a Hive
metastore (embedded Derby, in the test's own folder) the registration outlives
the sync: the sync runs in a ``headwater sync`` process of its own (the shared
session cannot switch ``spark.sql.catalogImplementation``), and another process,
a new Spark session with the same metastore settings, reads the table by name.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from headwater.config import load_connection
from headwater.engine import SyncEngine, SyncResult
from headwater.metadata_store import MetadataStore
from tests.integration._cli import cli_env, sync, write_connection
from tests.integration._connections import connection_file

pytestmark = pytest.mark.spark

SOURCE = {"seed": 5, "users": 300, "orders": 120, "rows_per_partition": 100}
STREAMS = [{"name": "users"}, {"name": "orders"}]


def _sync(path: Path) -> SyncResult:
    config = load_connection(path)
    result = SyncEngine(config, MetadataStore(config.metadata_store or "")).run()
    assert result.status == "succeeded", result.to_dict()
    return result


@pytest.mark.parametrize(("writer", "prefix"), [("auto", "hw_"), ("spark", "hw_spark_")])
def test_a_synced_table_is_found_by_name_in_the_session(spark: Any, tmp_path: Path,
                                                        writer: str, prefix: str) -> None:
    path = connection_file(tmp_path, name="named", source=SOURCE, streams=STREAMS,
                           writer=writer, delta_config={"database": "raw",
                                                       "table_prefix": prefix})
    first = _sync(path)
    written = {s.name: s.records_written for s in first.streams}
    for stream in ("users", "orders"):
        table = spark.table(f"raw.{prefix}{stream}")
        assert table.count() == written[stream] == SOURCE[stream]
        location = spark.sql(f"DESCRIBE DETAIL raw.{prefix}{stream}").first()["location"]
        assert location.rstrip("/").endswith(str(tmp_path / "lake" / stream))
    # Every sync registers again, idempotently, and the name sees the new rows.
    again = _sync(connection_file(tmp_path, name="named", source={**SOURCE, "generation": 1},
                                  streams=STREAMS, writer=writer,
                                  delta_config={"database": "raw", "table_prefix": prefix}))
    users = {s.name: s for s in again.streams}["users"]
    assert spark.table(f"raw.{prefix}users").count() == users.records_written


def test_a_name_taken_by_a_table_elsewhere_fails_the_stream_naming_both(
        spark: Any, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    spark.range(3).write.format("delta").save(str(elsewhere))
    spark.sql("CREATE DATABASE IF NOT EXISTS clash")
    spark.sql(f"CREATE TABLE clash.users USING delta LOCATION '{elsewhere}'")
    path = connection_file(tmp_path, name="clashing", source=SOURCE,
                           streams=[{"name": "users"}], delta_config={"database": "clash"})
    config = load_connection(path)
    result = SyncEngine(config, MetadataStore(config.metadata_store or "")).run()
    assert result.status == "failed"
    error = result.streams[0].error or ""
    assert "clash.users" in error and str(elsewhere) in error, error
    assert str(tmp_path / "lake" / "users") in error, error
    # The other table is left as it was.
    assert spark.table("clash.users").count() == 3


def _hive_conf(folder: Path) -> dict[str, str]:
    """A Hive metastore in embedded Derby, and its warehouse, all inside ``folder``."""
    return {
        "spark.sql.catalogImplementation": "hive",
        "spark.sql.warehouse.dir": str(folder / "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL":
            f"jdbc:derby:;databaseName={folder / 'metastore_db'};create=true",
    }


#: A new Spark session in a process of its own: reads the tables by name, nothing else.
_READ_BY_NAME = textwrap.dedent("""\
    import json, sys
    from headwater.engine import SparkSettings, get_spark

    conf = json.loads(sys.argv[1])
    spark = get_spark(SparkSettings(master="local[1]", conf=conf, app_name="read-by-name"))
    found = {"catalog": spark.conf.get("spark.sql.catalogImplementation"),
             "tables": sorted(t.name for t in spark.catalog.listTables("raw")),
             "counts": {name: spark.table(name).count() for name in sys.argv[2:]}}
    print(json.dumps(found))
    spark.stop()
    """)


def test_tables_registered_in_a_hive_metastore_are_read_by_name_from_a_new_session(
        tmp_path: Path) -> None:
    hive = tmp_path / "hive"
    hive.mkdir()
    conf = _hive_conf(hive)
    path = write_connection(tmp_path, name="hived", source=SOURCE, streams=STREAMS)
    document = yaml.safe_load(path.read_text())
    document["destination"]["config"].update({"database": "raw", "table_prefix": "hw_"})
    path.write_text(yaml.safe_dump(document))

    flags = [arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")]
    synced = sync(tmp_path, path, *flags)
    assert synced.exit_code == 0, synced.describe()
    assert synced.document is not None
    written = {s["name"]: s["records_written"] for s in synced.document["streams"]}
    assert written == {"users": SOURCE["users"], "orders": SOURCE["orders"]}
    assert (hive / "metastore_db").is_dir()  # the metastore is the test's, not the CLI's folder

    read = subprocess.run(
        [sys.executable, "-c", _READ_BY_NAME, json.dumps(conf), "raw.hw_users", "raw.hw_orders"],
        cwd=tmp_path, env=cli_env(tmp_path), capture_output=True, text=True, timeout=600,
        check=False)
    assert read.returncode == 0, read.stderr[-4000:]
    found = json.loads(read.stdout.strip().splitlines()[-1])
    assert found["catalog"] == "hive"
    assert found["tables"] == ["hw_orders", "hw_users"]
    assert found["counts"] == {"raw.hw_users": written["users"],
                               "raw.hw_orders": written["orders"]}
