"""``examples/history.yaml`` is a connection ``headwater validate`` accepts."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from headwater.cli.app import app

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "history.yaml"


def test_the_history_example_validates() -> None:
    result = CliRunner().invoke(app, ["validate", str(EXAMPLE)])
    assert result.exit_code == 0, result.output
    assert "all valid" in result.stdout
