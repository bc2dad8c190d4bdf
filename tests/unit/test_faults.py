"""The ``raise-`` fault points raise once, where asked, and let the sync go on."""

from __future__ import annotations

import pytest

from headwater import _faults
from headwater._faults import InjectedFault, fault_point


def test_a_raise_point_raises_on_its_nth_pass_only(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEADWATER_FAULT", "raise-after-commit:2")
    monkeypatch.setattr(_faults, "_counts", {})
    fault_point("raise-after-commit")
    fault_point("after-commit")  # another point: not counted, not hit
    with pytest.raises(InjectedFault, match="raise-after-commit"):
        fault_point("raise-after-commit")
    fault_point("raise-after-commit")
