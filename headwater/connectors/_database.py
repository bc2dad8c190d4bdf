"""What the database sources (``postgres``, ``mysql``) share around their tables' streams.

Each keeps its own catalog, SQL and reader; these are the parts that must read the
same in both: a config parsed into the spec's errors, a stream's JSON schema with
its cursor candidates, the cursor's state converter and where its history starts,
and the first sync's window for rows whose cursor is NULL.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from headwater.errors import SpecValidationError
from headwater.sdk import (
    IntegerStateConverter,
    IsoDateTimeStateConverter,
    Partition,
    StateConverter,
)

__all__ = ["converter_for", "cursor_null_partition", "history_start", "parse_config",
           "spec_of", "table_schema"]

#: Where incremental history begins (the first window is open below anyway).
_DATETIME_START = "1000-01-01T00:00:00Z"
_INTEGER_START = -(2**63)

Config = TypeVar("Config", bound=BaseModel)


def parse_config(model: type[Config], config: Mapping[str, Any], source: str) -> Config:
    """``config`` as ``model``, or the spec's error naming each bad field."""
    try:
        return model.model_validate(dict(config))
    except ValidationError as exc:
        problems = [(".".join(["source.config", *(str(p) for p in e["loc"])]), e["msg"])
                    for e in exc.errors(include_input=False)]
        raise SpecValidationError(f"the {source} source config does not match its spec",
                                  problems) from exc


def spec_of(model: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema of a config model with a ``password`` secret (no default shown)."""
    schema = model.model_json_schema(mode="validation")
    schema["properties"]["password"].pop("default", None)
    return {"$schema": "http://json-schema.org/draft-07/schema#", **schema}


def table_schema(properties: dict[str, Any], cursor_candidates: list[str],
                 unmapped: list[str]) -> dict[str, Any]:
    """A table's stream schema; discover shows which columns could serve as the cursor."""
    schema: dict[str, Any] = {"$schema": "http://json-schema.org/draft-07/schema#",
                              "type": "object", "properties": properties,
                              "x-cursor-candidates": cursor_candidates}
    if unmapped:
        schema["description"] = "carried as text, no type mapping: " + ", ".join(unmapped)
    return schema


def converter_for(cursor_kind: str | None) -> StateConverter | None:
    """The state converter of a cursor column (``"integer"`` or ``"datetime"``)."""
    if cursor_kind == "integer":
        return IntegerStateConverter()
    if cursor_kind is not None:
        return IsoDateTimeStateConverter()
    return None


def history_start(converter: StateConverter | None) -> Any:
    return _INTEGER_START if isinstance(converter, IntegerStateConverter) else _DATETIME_START


def cursor_null_partition(stream: str, start: Any) -> Partition:
    """Rows whose cursor is NULL: read by the first sync (and every full refresh) only,
    in an empty window so the cursor's ranges do not move."""
    return Partition(stream, f"{stream}:cursor-null",
                     {"start": start, "end": start, "cursor_null": True})
