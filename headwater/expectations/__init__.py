"""Data-quality expectations: named Spark SQL checks of each row of a stream, each with
an action (``warn``, ``drop``, ``quarantine``, ``fail``); see ``docs/expectations.md``.

:mod:`._config` is what the connection file holds (no Spark imported);
:mod:`._arrow` evaluates them inside the Python tasks where pyarrow can,
:mod:`._checks` in Spark otherwise; :mod:`._quarantine` names the table that keeps
the rows a ``quarantine`` expectation takes out (a stream of its own, which the
engine commits: :mod:`headwater.engine._quarantine`), and :mod:`._split` has the
tasks write it beside the stream's; :mod:`._stream` is what a stream's run asks.
"""

from headwater.errors import ExpectationFailed
from headwater.expectations._checks import (
    FAILED_COLUMN,
    CheckpointCounts,
    StreamExpectations,
    add_counts,
)
from headwater.expectations._config import (
    ExpectationConfig,
    expectations_problem,
    unknown_columns_problem,
)
from headwater.expectations._quarantine import (
    quarantine_plan,
    quarantine_refusal,
    quarantine_stream,
)
from headwater.expectations._stream import STATS_KEY, StreamChecks, configured_expectations

__all__ = ["FAILED_COLUMN", "STATS_KEY", "CheckpointCounts", "ExpectationConfig",
           "ExpectationFailed", "StreamChecks", "StreamExpectations", "add_counts",
           "configured_expectations", "expectations_problem",
           "quarantine_plan", "quarantine_refusal", "quarantine_stream",
           "unknown_columns_problem"]
