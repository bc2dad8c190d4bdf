"""The connection files in ``examples/``, validated as a user would: ``headwater validate``."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def validate(path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    """``headwater validate PATH`` with its own ``HEADWATER_HOME``: exit code and output."""
    from headwater.cli.app import app

    monkeypatch.setenv("HEADWATER_HOME", str(home))
    result = CliRunner().invoke(app, ["validate", str(path)])
    return result.exit_code, result.output + (result.stderr or "")
