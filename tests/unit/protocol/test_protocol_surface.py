"""``headwater.protocol.__all__`` is the public surface: complete, and nothing more."""

from __future__ import annotations

import types

import headwater.protocol as protocol


def test_all_names_exist() -> None:
    missing = [name for name in protocol.__all__ if not hasattr(protocol, name)]

    assert missing == []


def test_all_lists_every_public_name() -> None:
    public = {
        name
        for name, value in vars(protocol).items()
        if not name.startswith("_") and not isinstance(value, types.ModuleType)
    }

    assert public == set(protocol.__all__)
    assert len(protocol.__all__) == len(set(protocol.__all__))
