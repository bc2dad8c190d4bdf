"""``headwater.sdk.http.__all__`` is the package's public surface: complete, and nothing more."""

from __future__ import annotations

import types

import headwater.sdk.http as http


def test_all_lists_every_public_name_and_nothing_else() -> None:
    public = {name for name, value in vars(http).items()
              if not name.startswith("_") and not isinstance(value, types.ModuleType)}
    assert public == set(http.__all__)
    assert all(hasattr(http, name) for name in http.__all__)
