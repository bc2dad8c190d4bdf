"""Finding a source class by its ``source.type`` name."""

from __future__ import annotations

import pytest

import headwater.connectors as connectors
from headwater.connectors import get_source_class, source_types
from headwater.connectors.sample import SampleSource
from headwater.errors import ConfigError


def test_public_surface_matches_all() -> None:
    public = {
        name
        for name, value in vars(connectors).items()
        if not name.startswith("_")
        and getattr(value, "__module__", connectors.__name__) == connectors.__name__
    }
    assert set(connectors.__all__) == public - {"annotations", "sample", "object_storage", "rest",
                                                "postgres", "mysql", "airbyte", "kafka",
                                                "jdbc"}


def test_the_sample_source_is_built_in() -> None:
    assert get_source_class("sample") is SampleSource
    assert "sample" in source_types()


def test_an_unknown_type_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError) as excinfo:
        get_source_class("postgress")
    assert "postgress" in str(excinfo.value)
    assert "sample" in str(excinfo.value)
    assert excinfo.value.context["field"] == "source.type"
