"""``examples/files.yaml`` is a connection ``headwater validate`` accepts, and the same file
with a codec its format does not take is refused, naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

EXAMPLE = Path(__file__).resolve().parents[4] / "examples" / "files.yaml"


def _validate(path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, str]:
    from headwater.cli.app import app

    monkeypatch.setenv("HEADWATER_HOME", str(home))
    result = CliRunner().invoke(app, ["validate", str(path)])
    return result.exit_code, result.output + (result.stderr or "")


def test_the_example_is_valid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, output = _validate(EXAMPLE, tmp_path, monkeypatch)
    assert code == 0, output
    assert "all valid" in output


def test_a_codec_the_format_does_not_take_is_refused(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    wrong = tmp_path / "files.yaml"
    wrong.write_text(EXAMPLE.read_text().replace("compression: gzip", "compression: snappy"))
    code, output = _validate(wrong, tmp_path, monkeypatch)
    assert code != 0
    assert "destination.config.compression" in output
