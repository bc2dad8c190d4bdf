"""``examples/schema-contracts.yaml`` is a connection ``headwater validate`` accepts, and
the same file with an action a kind of change does not take is refused, naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit._examples import EXAMPLES
from tests.unit._examples import validate as _validate

EXAMPLE = EXAMPLES / "schema-contracts.yaml"


def test_the_example_is_valid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, output = _validate(EXAMPLE, tmp_path, monkeypatch)
    assert code == 0, output
    assert "all valid" in output


def test_rescue_is_for_new_columns_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wrong = tmp_path / "schema-contracts.yaml"
    wrong.write_text(EXAMPLE.read_text().replace("type_changes: discard_value",
                                                 "type_changes: rescue"))
    code, output = _validate(wrong, tmp_path, monkeypatch)
    assert code == 2, output
    assert "streams[0].schema_contract.type_changes" in output
