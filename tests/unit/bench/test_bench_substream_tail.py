"""The substream benchmark's reading of a run: its in-flight profile and its tail's steps."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench._traced_cli import descendants_cpu
from bench.substream_api_vs_cdk import in_flight_profile, tail_cpu, tail_steps


def test_the_profile_shows_a_ramp_and_a_drain() -> None:
    # Two calls of 0.5 s from 10.0, four more from 10.5, one from 11.0: bins of 0.5 s.
    arrivals = [10.0, 10.0, 10.5, 10.5, 10.5, 10.5, 11.0]
    assert in_flight_profile(arrivals, 0.5, 0.5) == pytest.approx([2.0, 4.0, 1.0])
    # A call spanning two bins counts in each for the part it spent there.
    assert in_flight_profile([0.0, 0.25], 0.5, 0.5) == pytest.approx([1.5, 0.5])
    assert in_flight_profile([], 0.05) == []


def test_the_tail_is_each_moment_from_the_commands_start(tmp_path: Path) -> None:
    trace = tmp_path / "trace.txt"
    trace.write_text("100.5 1 spark-ready\n"
                     "101.0 2 reading\n"
                     "101.5 2 partition-read\n"
                     "102.0 3 partition-read\n"
                     "102.0 1 after-commit\n"
                     "102.5 1 after-commit\n"
                     "102.6 1 summary-printed\n"
                     "102.6 1 cpu jvm 8.25\n"
                     "102.7 1 interpreter-exit\n")
    steps = tail_steps(trace, began=100.0, last_answer=101.8, wall=2.9)
    assert steps == [(pytest.approx(0.5), "spark-ready"),
                     (pytest.approx(1.8), "last call answered (API)"),
                     (pytest.approx(2.0), "after-commit (first of 2)"),
                     (pytest.approx(2.0), "partition-read (last)"),
                     (pytest.approx(2.5), "after-commit (last)"),
                     (pytest.approx(2.6), "summary-printed"),
                     (pytest.approx(2.7), "interpreter-exit"),
                     (pytest.approx(2.9), "process exit")]
    assert tail_cpu(trace) == {"jvm": 8.25}


def test_the_cpu_of_a_process_tree_counts_the_root() -> None:
    import os

    kinds = descendants_cpu(os.getpid())
    assert set(kinds) <= {"driver", "jvm", "python", "other"}
    assert kinds["driver"] > 0
