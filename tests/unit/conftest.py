"""Fixtures for unit tests: each starts from a clean process-wide state."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from headwater.config._secrets import _registry


@pytest.fixture(autouse=True)
def _no_secret_from_an_earlier_test() -> Iterator[None]:
    """The secret masker is process-wide (it must be: any thread may print).

    Why clear it: a unit test that loads a connection registers its secrets, and a
    later test in the same worker then sees them masked in text it compares exactly.
    CI failed so: ``PG_PASSWORD=example`` from the PostgreSQL example's test masked
    ``api.example.com`` in the lineage test (the masking was right; the order was luck).
    """
    _registry.clear()
    yield
    _registry.clear()
