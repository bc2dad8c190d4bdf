"""Per-partition figures merge the way Spark merges accumulator updates of tasks."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from headwater.engine._partition_stats import _FiguresParam, _StagingFiguresParam, task_attempt


def test_figures_of_one_partition_add_up_and_keep_the_highest_attempt() -> None:
    param = _FiguresParam()
    total = param.zero({})
    total = param.addInPlace(total, {"p1": {"records": 3, "rejected": 1, "bytes": 30,
                                            "duration_s": 0.5, "attempt": 1}})
    total = param.addInPlace(total, {"p2": {"records": 5, "rejected": 0, "bytes": 50,
                                            "duration_s": 0.25, "attempt": 2}})
    total = param.addInPlace(total, {"p1": {"records": 2, "rejected": 0, "bytes": 20,
                                            "duration_s": 0.5, "attempt": 3}})
    assert total == {
        "p1": {"records": 5, "rejected": 1, "bytes": 50, "duration_s": 1.0, "attempt": 3},
        "p2": {"records": 5, "rejected": 0, "bytes": 50, "duration_s": 0.25, "attempt": 2},
    }


def test_outside_a_spark_task_the_attempt_is_the_first() -> None:
    assert task_attempt() == 1


def test_a_partitions_own_state_travels_with_its_figures_and_the_later_one_wins() -> None:
    param = _FiguresParam()
    total = param.addInPlace({}, {"p1": {"records": 1, "state": {"cursor": 1}}})
    total = param.addInPlace(total, {"p1": {"records": 1, "state": {"cursor": 2}}})
    assert total["p1"]["state"] == {"cursor": 2}
    assert total["p1"]["records"] == 2


def test_the_driver_stages_states_before_merging_and_executors_get_a_plain_param() -> None:
    staged: list[dict[str, Any]] = []
    param = _StagingFiguresParam(staged.append)
    total = param.addInPlace({}, {"p1": {"records": 3, "state": {"cursor": 3}},
                                  "p2": {"records": 0}})
    assert staged == [{"p1": {"cursor": 3}}]
    assert total["p1"]["state"] == {"cursor": 3}
    # What executors unpickle has no sink: the metadata store never leaves the driver.
    assert type(pickle.loads(pickle.dumps(param))) is _FiguresParam


def test_a_state_that_cannot_be_staged_is_kept_as_an_error_and_still_merged() -> None:
    def refuse(states: dict[str, Any]) -> None:
        raise OSError("disk full")

    param = _StagingFiguresParam(refuse)
    total = param.addInPlace({}, {"p1": {"records": 1, "state": {"cursor": 1}}})
    assert total["p1"]["state"] == {"cursor": 1}
    assert isinstance(param.error, OSError)
    with pytest.raises(OSError):
        raise param.error


def test_a_collector_that_stopped_staging_ignores_late_updates() -> None:
    from headwater.engine._partition_stats import PartitionStatsCollector

    staged: list[dict[str, Any]] = []
    param = _StagingFiguresParam(staged.append)
    collector = PartitionStatsCollector(None, param)  # type: ignore[arg-type]
    collector.stop_staging()
    param.addInPlace({}, {"p1": {"records": 1, "state": {"cursor": 1}}})
    assert staged == []
    assert collector.staging_error is None
