"""``examples/files.yaml`` is a connection ``headwater validate`` accepts, and the same file
with a codec its format does not take is refused, naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit._examples import EXAMPLES
from tests.unit._examples import validate as _validate

EXAMPLE = EXAMPLES / "files.yaml"


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
