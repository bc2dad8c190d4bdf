"""The engine against a destination that is not Delta (``FakeDestination`` of
``headwater.destinations.testing``).

The engine knows no table format: what it may do with a table comes from the
destination's capabilities.  The fake declares one commit lane per mode and no
task-written files, so these syncs show the engine honouring both, and its
commits, stagings, publishes and run replacements show exactly-once without Delta.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from headwater.config import load_connection
from headwater.connectors.sample import SampleSource
from headwater.destinations.testing import FakeDestination
from headwater.engine import SyncEngine, SyncResult
from headwater.engine._rerun import replay
from headwater.metadata_store import MetadataStore
from tests.integration._connections import connection_file

pytestmark = pytest.mark.spark

SOURCE = {"seed": 5, "users": 300, "orders": 400, "rows_per_partition": 100}
STREAMS = [
    {"name": "users", "sync_mode": "incremental", "destination_sync_mode": "append_dedup",
     "cursor_field": "updated_at", "primary_key": ["id"]},
    {"name": "orders", "sync_mode": "full_refresh", "destination_sync_mode": "overwrite"},
]


def _sync(path: Path, destination: FakeDestination) -> SyncResult:
    connection = load_connection(path)
    engine = SyncEngine(connection, MetadataStore(connection.metadata_store or ""),
                        destination=destination)
    return engine.run()


def _values(table: pa.Table, columns: list[str]) -> Counter[tuple[Any, ...]]:
    return Counter(zip(*(table.column(c).to_pylist() for c in columns), strict=True))


def _assert_equals_source(destination: FakeDestination, source: dict[str, Any],
                          stream: str) -> None:
    expected = SampleSource(source).expected_rows(stream)
    actual = destination.read_arrow(stream)
    assert _values(actual, expected.column_names) == _values(expected, expected.column_names)


def test_a_fake_destination_gets_every_mode_exactly_once_within_its_capabilities(
        spark: Any, tmp_path: Path) -> None:
    path = connection_file(tmp_path, name="fake", source=SOURCE, streams=STREAMS,
                           checkpoint={"partitions_per_checkpoint": 1,
                                       "concurrent_checkpoints": 3})
    destination = FakeDestination({"path": str(tmp_path / "fake")})
    first = _sync(path, destination)
    assert first.status == "succeeded", first.to_dict()
    for stream in ("users", "orders"):
        _assert_equals_source(destination, SOURCE, stream)
    # One lane per mode, as the capabilities say, though the connection asks for 3.
    for stream in ("users", "orders"):
        app_ids = {app_id for name, app_id, _, _ in destination.calls if name == stream}
        assert len(app_ids) == 2 if stream == "orders" else len(app_ids) == 1, app_ids
    # No task-written files: every checkpoint's rows came to commit / stage as rows.
    kinds = Counter((name, kind) for name, _, _, kind in destination.calls)
    assert kinds == {("users", "commit"): 3, ("orders", "stage"): 4, ("orders", "publish"): 1}
    # The run's history names commits the way the destination does.
    store = MetadataStore(load_connection(path).metadata_store or "")
    recorded = [c.stats for c in store.list_checkpoints(first.run_id) if c.stream == "users"]
    assert all("fake_commit" in stats and "delta_version" not in stats for stats in recorded)

    # New generation: updated users merge by key (the latest cursor wins), orders replaced.
    changed = {**SOURCE, "generation": 1}
    path = connection_file(tmp_path, name="fake", source=changed, streams=STREAMS,
                           checkpoint={"partitions_per_checkpoint": 1,
                                       "concurrent_checkpoints": 3})
    second = _sync(path, destination)
    assert second.status == "succeeded", second.to_dict()
    for stream in ("users", "orders"):
        _assert_equals_source(destination, changed, stream)

    # A replay replaces the run's rows: same table afterwards, nothing doubled.
    connection = load_connection(path)
    replayed = replay(SyncEngine(connection, store, destination=destination), second.run_id,
                      ["orders"])
    assert replayed.status == "succeeded", replayed.to_dict()
    _assert_equals_source(destination, changed, "orders")


class Killed(BaseException):
    """Ends the sync where it is, as SIGKILL would (nothing in the engine catches it)."""


class DiesAfterCommitting(FakeDestination):
    """Its second commit lands, then the process "dies" before the engine hears of it."""

    commits = 0

    def _log(self, stream: str, *args: Any) -> Any:
        result = super()._log(stream, *args)
        DiesAfterCommitting.commits += 1
        if DiesAfterCommitting.commits == 2:
            raise Killed
        return result


def test_a_commit_that_landed_before_a_kill_is_found_by_the_next_attempt_not_repeated(
        spark: Any, tmp_path: Path) -> None:
    streams = [{"name": "orders", "sync_mode": "incremental", "destination_sync_mode": "append",
                "cursor_field": "updated_at"}]
    path = connection_file(tmp_path, name="killed", source=SOURCE, streams=streams,
                           checkpoint={"partitions_per_checkpoint": 1})
    destination = DiesAfterCommitting({"path": str(tmp_path / "fake")})
    with pytest.raises(Killed):
        _sync(path, destination)
    assert len(destination.log("orders")) == 2  # the second commit landed
    again = _sync(path, destination)
    assert again.resumed and again.attempt == 2 and again.status == "succeeded", again.to_dict()
    # The landed checkpoint was found by its marker, not committed again.
    assert len(destination.log("orders")) == 4
    _assert_equals_source(destination, SOURCE, "orders")
