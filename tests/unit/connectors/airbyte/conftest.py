"""The fake connector, started as a real process through the ``airbyte`` source type."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

FAKE_CONNECTOR = Path(__file__).with_name("fake_connector.py")


def fake_source_config(**connector: Any) -> dict[str, Any]:
    """An ``airbyte`` source config that runs the fake connector with ``connector`` as config."""
    return {"command": [sys.executable, str(FAKE_CONNECTOR)], "config": connector}


@pytest.fixture
def fake_config() -> Any:
    return fake_source_config
