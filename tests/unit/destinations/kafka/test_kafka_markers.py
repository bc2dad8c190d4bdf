"""Commit markers: bounded keys, what the latest marker of a key answers, and a metadata
store behind the cluster refused before anything is produced."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from headwater.destinations import CommitMarker
from headwater.destinations.kafka import _markers
from headwater.destinations.kafka._markers import Unit
from headwater.errors import StoreBehindTableError

APP = "headwater/store-1/shop/orders/0"
MARKER = CommitMarker(app_id=APP, version=7, run_id="run-a", stream="orders",
                      checkpoint_index=7, partition_states={"p1": {"offset": 3}})


def _decoded(value: bytes) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(value)
    return document


def test_keys_are_one_per_lane_and_one_per_lane_and_task() -> None:
    assert _markers.commit_key(APP) == f"commit/{APP}"
    assert _markers.task_key(APP, 3) == f"task/{APP}/3"
    assert _markers.task_key(APP, 3).startswith(_markers.task_prefix(APP))
    # Stable across attempts: the same lane and task fence each other.
    assert _markers.transactional_id(APP, 3) == f"{APP}/task-3"
    assert _markers.transactional_id(APP, None) == f"{APP}/commit"


def test_a_task_marker_lists_every_unit_landed_and_is_read_back() -> None:
    value = _markers.task_value(MARKER, {"p2": Unit(5, 1, 100), "p1": Unit(2, 0, 40)})
    markers = {_markers.task_key(APP, 0): _decoded(value),
               # an older checkpoint's marker of another task is no answer for this one
               _markers.task_key(APP, 1): {"version": 6, "run_id": "run-a",
                                           "units": {"p9": {"rows": 1, "rejected": 0,
                                                            "bytes": 1}}}}
    assert _markers.landed_units(markers, MARKER) == {"p1": Unit(2, 0, 40),
                                                      "p2": Unit(5, 1, 100)}
    assert _markers.landed_units(markers, MARKER, task=1) == {}


@pytest.mark.parametrize(("version", "run_id"), [(8, "run-a"), (7, "run-b")])
def test_a_task_marker_ahead_of_the_store_is_refused(version: int, run_id: str) -> None:
    markers = {_markers.task_key(APP, 0): {"version": version, "run_id": run_id, "units": {}}}
    with pytest.raises(StoreBehindTableError, match="behind the Kafka cluster"):
        _markers.landed_units(markers, MARKER)


def test_the_lane_marker_answers_with_the_tag_and_counts() -> None:
    value, total = _markers.commit_value(None, MARKER, {"p1": Unit(2, 0, 40),
                                                        "p2": Unit(5, 1, 100)})
    assert total == Unit(7, 1, 140)
    found = _markers.find_commit({_markers.commit_key(APP): _decoded(value)}, MARKER)
    assert found is not None and found.already_committed
    assert (found.rows, found.rejected, found.bytes) == (7, 1, 140)
    assert found.partition_states == {"p1": {"offset": 3}}
    assert _markers.find_commit({}, MARKER) is None


def test_the_lane_marker_keeps_the_last_commits_only() -> None:
    lane: dict[str, Any] | None = None
    for version in range(1, _markers.KEPT_COMMITS + 6):
        value, _ = _markers.commit_value(lane, replace(MARKER, version=version,
                                                       checkpoint_index=version), {})
        lane = _decoded(value)
    assert lane is not None and len(lane["commits"]) == _markers.KEPT_COMMITS
    markers = {_markers.commit_key(APP): lane}
    old = replace(MARKER, version=2, checkpoint_index=2)
    # Past it, without its entry: committed without figures on a resumed attempt...
    found = _markers.find_commit(markers, replace(old, attempt=2))
    assert found is not None and found.already_committed and found.rows == 0
    # ...and a store that went back in time on a first attempt.
    with pytest.raises(StoreBehindTableError):
        _markers.find_commit(markers, old)
    # A version the lane has not reached did not land.
    assert _markers.find_commit(markers, replace(MARKER, version=99)) is None


def test_a_commit_of_the_same_version_by_another_run_is_the_store_behind() -> None:
    value, _ = _markers.commit_value(None, replace(MARKER, run_id="run-b"), {})
    with pytest.raises(StoreBehindTableError, match="run-b"):
        _markers.find_commit({_markers.commit_key(APP): _decoded(value)}, MARKER)
