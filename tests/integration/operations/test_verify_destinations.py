"""``headwater verify`` on every destination that keeps a table, through its ``read_table``:
rows removed from the table by hand (by a client that is not Headwater's) are found in the
right window, ``--repair`` makes the table equal again and a second verify passes.  One
small sync of the ``sample`` source each; the CLI runs in process on the shared session.
(Delta: ``test_verify_delta.py``; Kafka keeps no table: the unit tests.)"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from tests.integration._connections import connection_file, sync
from tests.integration._in_process import run_in_process
from tests.integration.destinations.iceberg._catalogs import iceberg_config, load_table
from tests.integration.destinations.postgres._tables import config as postgres_config

pytestmark = pytest.mark.spark

#: 3 windows of 100 users; ids 100..104 are in the second (created at start + id seconds).
SOURCE = {"seed": 7, "users": 300, "orders": 0, "rows_per_partition": 100}
GONE = range(100, 105)

#: Removes :data:`GONE` from the users table of a destination's config, by hand.
Remove = Callable[[dict[str, Any]], None]


def _remove_from_iceberg(config: dict[str, Any]) -> None:
    """PyIceberg's own delete (copy-on-write: the file is rewritten without the rows)."""
    load_table(config).delete(f"id >= {GONE.start} and id < {GONE.stop}")


def _remove_from_files(config: dict[str, Any]) -> None:
    """The data file holding the rows written again without them, where the manifest names it."""
    for path in Path(config["path"], "users").rglob("*.parquet"):
        table = pq.read_table(path)
        ids = table.column("id")
        keep = pc.invert(pc.and_(pc.greater_equal(ids, GONE.start), pc.less(ids, GONE.stop)))
        if not pc.all(keep).as_py():
            pq.write_table(table.filter(keep), path)


def _remover_of_postgres(url: str) -> Remove:
    def remove(config: dict[str, Any]) -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f'DELETE FROM "{config["schema"]}".users WHERE id >= %s AND id < %s',
                         [GONE.start, GONE.stop])
    return remove


@contextmanager
def _destination(kind: str, tmp_path: Path,
                 request: pytest.FixtureRequest) -> Iterator[tuple[dict[str, Any], Remove]]:
    """The destination section of the connection, and how to remove rows by hand."""
    if kind == "iceberg":
        yield {"type": "iceberg", "config": iceberg_config(tmp_path / "warehouse")}, \
            _remove_from_iceberg
    elif kind == "files":
        yield {"type": "files", "config": {"path": str(tmp_path / "files"),
                                           "format": "parquet"}}, _remove_from_files
    else:
        server = request.getfixturevalue("postgres_server")
        with server.database() as database:
            yield {"type": "postgres", "config": postgres_config(server, database, "vf")}, \
                _remover_of_postgres(server.database_url(database))


@pytest.mark.parametrize(("kind", "mode"), [("iceberg", "append_dedup"),
                                            ("postgres", "append_dedup"),
                                            ("files", "append")])
def test_rows_removed_by_hand_are_found_and_repaired(spark: Any, tmp_path: Path, kind: str,
                                                     mode: str,
                                                     request: pytest.FixtureRequest) -> None:
    with _destination(kind, tmp_path, request) as (destination, remove):
        path = connection_file(
            tmp_path, name="vd", source=SOURCE, destination=destination,
            streams=[{"name": "users", "sync_mode": "incremental",
                      "destination_sync_mode": mode, "primary_key": ["id"]}],
            checkpoint={"partitions_per_checkpoint": 2})
        sync(path)
        remove(destination["config"])

        found = run_in_process(tmp_path, "verify", str(path), "--json")
        assert found.exit_code == 1, found.stdout + found.stderr
        assert found.document is not None
        windows = found.document["streams"][0]["windows"]
        assert len(windows) == 3 and all(w["compared"] == "count and keys" for w in windows)
        [differing] = [w for w in windows if w["differs"]]
        assert (differing["source_count"], differing["table_count"]) == (100, 95)
        assert differing["window"] == windows[1]["window"]

        repaired = run_in_process(tmp_path, "verify", str(path), "--repair")
        assert repaired.exit_code == 0, repaired.stdout + repaired.stderr
        assert "verified again: the windows are equal now" in repaired.stdout

        again = run_in_process(tmp_path, "verify", str(path), "--json")
        assert again.exit_code == 0, again.stdout + again.stderr
        assert again.document is not None and again.document["status"] == "equal"
