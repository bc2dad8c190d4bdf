"""A fresh loopback API per test (tests/api_server.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.api_server import ApiData, ApiServer, running


@pytest.fixture
def api() -> Iterator[ApiServer]:
    with running(ApiData.sample(surveys=12, issues=25)) as server:
        yield server
