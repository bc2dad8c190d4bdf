"""``headwater verify``'s options that are decided before anything is reached."""

from __future__ import annotations

import datetime as dt

import pytest
from typer.testing import CliRunner

from headwater.cli._verify_cmd import _moment
from headwater.cli.app import app
from headwater.errors import ConfigError


def test_since_takes_iso_times_and_durations() -> None:
    assert _moment("2026-11-01") == dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    assert _moment("2026-11-01T02:00:00+02:00") == dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    ago = dt.datetime.now(dt.UTC) - (_moment("36h") or dt.datetime.now(dt.UTC))
    assert dt.timedelta(hours=35, minutes=59) < ago < dt.timedelta(hours=36, minutes=1)
    assert _moment(None) is None
    with pytest.raises(ConfigError, match="--since 'yesterday'"):
        _moment("yesterday")


def test_since_and_a_window_are_refused_together(tmp_path: object) -> None:
    result = CliRunner().invoke(app, ["verify", "missing.yaml", "--since", "7d",
                                      "--from", "2024-01-01", "--to", "2024-02-01", "--json"])
    assert result.exit_code == 2
    assert "--since chooses runs, --from/--to a window" in result.stdout
