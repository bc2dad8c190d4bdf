"""What expectations report without Spark: a failing row's sample never shows a secret,
and each stream's counts appear in the summary the CLI prints."""

from __future__ import annotations

import io

from rich.console import Console

from headwater.cli._render import print_result
from headwater.config import register_secrets
from headwater.config._secrets import REDACTED
from headwater.engine import StreamStats, SyncResult
from headwater.expectations import ExpectationConfig, StreamExpectations, add_counts
from headwater.expectations._arrow import sample_text

SCHEMA = {"properties": {"id": {"type": "integer"}, "token": {"type": "string",
                                                              "airbyte_secret": True},
                         "note": {"type": "string"}}}


def test_a_failing_rows_sample_masks_secret_columns_and_registered_secrets() -> None:
    register_secrets(["hunter2-registered"])
    checks = StreamExpectations("users", [ExpectationConfig(name="x", expr="id > 0")], SCHEMA)

    shown = sample_text({"_hw_raw_id": "a-1", "id": -1, "token": "tok-123",
                         "note": "password is hunter2-registered", "long": "y" * 500},
                        checks.secret_columns)

    assert "tok-123" not in shown and "hunter2-registered" not in shown
    assert shown.count(REDACTED) == 2
    assert '"id": "-1"' in shown and '"_hw_raw_id": "a-1"' in shown
    assert "y" * 200 + "..." in shown and "y" * 201 not in shown


def test_the_summary_prints_each_expectations_counts() -> None:
    stats = StreamStats(name="orders", mode="incremental+append", status="succeeded")
    add_counts(stats.expectations, {"positive_amount": {"action": "drop", "evaluated": 1000,
                                                        "failed": 12}})
    add_counts(stats.expectations, {"positive_amount": {"action": "drop", "evaluated": 500,
                                                        "failed": 3}})
    out = io.StringIO()
    console = Console(file=out, width=200, color_system=None)

    print_result(SyncResult(run_id="r1", connection="shop", status="succeeded", resumed=False,
                            attempt=1, streams=[stats]), console, console)

    line = next(text for text in out.getvalue().splitlines() if "positive_amount" in text)
    assert [cell.strip() for cell in line.split("│")[1:-1]] == [
        "orders", "positive_amount", "drop", "1,500", "15"]
    assert stats.to_dict()["expectations"] == {
        "positive_amount": {"action": "drop", "evaluated": 1500, "failed": 15}}
