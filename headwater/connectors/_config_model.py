"""A source whose config is one pydantic model: its spec and its parsing, in one place.

The database sources (``postgres``, ``mysql``, ``jdbc``) describe their config as a frozen
pydantic model; the spec is that model's JSON Schema (a secret's ``None``
default left out: absent is not a password), and a config that does not fit
becomes one :class:`~headwater.errors.SpecValidationError` listing every
problem under ``source.config.<field>``, never echoing a value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from headwater.errors import SpecValidationError

__all__ = ["model_spec", "parse_model"]

Model = TypeVar("Model", bound=BaseModel)


def model_spec(model: type[BaseModel], secrets: tuple[str, ...] = ("password",),
               ) -> dict[str, Any]:
    """The JSON Schema spec of a source whose config is ``model``."""
    schema = model.model_json_schema(mode="validation")
    for name in secrets:
        schema["properties"][name].pop("default", None)
    return {"$schema": "http://json-schema.org/draft-07/schema#", **schema}


def parse_model(model: type[Model], config: Mapping[str, Any], type_name: str) -> Model:
    """``config`` as ``model``, or the spec's problems (no value repeated)."""
    try:
        return model.model_validate(dict(config))
    except ValidationError as exc:
        problems = [(".".join(["source.config", *(str(p) for p in e["loc"])]), e["msg"])
                    for e in exc.errors(include_input=False)]
        raise SpecValidationError(f"the {type_name} source config does not match its spec",
                                  problems) from exc
