"""``headwater sync``'s options that are checked before anything runs."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from headwater.cli.app import app
from headwater.errors import ExitCode


def test_one_run_and_watch_are_refused_together(tmp_path: Path) -> None:
    path = tmp_path / "shop.yaml"
    path.write_text("name: shop\nsource: {type: sample, config: {users: 10}}\n")
    result = CliRunner().invoke(app, ["sync", str(path), "--one-run", "--watch", "--json"])
    assert result.exit_code == ExitCode.CONFIG, result.output
    assert "--one-run and --watch" in json.loads(result.stdout)["error"]["message"]
