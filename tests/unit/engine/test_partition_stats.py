"""Per-partition figures merge the way Spark merges accumulator updates of tasks."""

from __future__ import annotations

from headwater.engine._partition_stats import _FiguresParam, task_attempt


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
