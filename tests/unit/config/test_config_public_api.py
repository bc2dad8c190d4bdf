"""``headwater.config`` exports exactly what ``__all__`` promises."""

from __future__ import annotations

import types

import headwater.config


def test_all_matches_the_public_names() -> None:
    public = {
        name
        for name, value in vars(headwater.config).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }
    assert set(headwater.config.__all__) == public
    assert len(headwater.config.__all__) == len(set(headwater.config.__all__))
