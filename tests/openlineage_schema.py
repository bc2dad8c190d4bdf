"""Validate OpenLineage events through the openlineage-python client's own model of the spec.

What is validated: each received JSON event is rebuilt, recursively, into the client's
classes (``openlineage.client.event_v2.RunEvent``, the ``generated`` facet classes). Those
``attrs`` classes are generated from the spec's JSON schemas, and their validators carry the
spec's formats: ``runId`` is a UUID, ``eventTime`` an ISO-8601 date-time with a time,
``producer`` and ``_producer`` URIs. Rebuilding fails on

* a required field that is missing, or ``null`` where the spec gives a type;
* a value of the wrong JSON type (the field's annotation: str, int, float, bool, lists,
  string-keyed objects, enums such as ``eventType`` by value, literals);
* a key the class does not have, except in a facet, which the spec's ``BaseFacet`` opens to
  more properties (kept as the client keeps them: ``with_additional_properties``);
* a facet whose ``_schemaURL`` is not exactly that of one generated facet class of its kind
  (a run facet among run facets...). Only Headwater's own facets (``_schemaURL``
  ``urn:headwater:...``) are exempt, as the spec allows custom facets; they must still be
  objects carrying ``_producer`` (a URI, checked by the base facet of their kind) and
  ``_schemaURL``.

Then the rebuilt event is serialized with the client's ``Serde.to_dict`` and must give back
the received JSON exactly: nothing was dropped, renamed or defaulted on the way (a
``schemaURL`` or ``_schemaURL`` other than the class's own fails here too). Beyond the model,
``eventTime`` must carry a UTC offset, as the spec's ``date-time`` format (RFC 3339) asks
and the client's validator does not check.

Why not the spec's JSON schema files: no package registry reachable here ships them (not the
openlineage-python wheel or sdist, nor the integration, Airflow or Marquez packages, nor the
Java jars), and files fetched from a repository snapshot are not committed in this
project. The client's model is generated from those files, so it is the spec as the
installed client version knows it.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import types
import typing
from collections.abc import Mapping
from datetime import datetime
from enum import Enum
from typing import Any

import attrs
import openlineage.client.generated as generated
from openlineage.client.event_v2 import RunEvent
from openlineage.client.generated.base import BaseFacet
from openlineage.client.serde import Serde

#: Facets of Headwater's own: only their base facet fields are checked.
OWN_FACET_PREFIX = "urn:headwater:"


class InvalidEvent(ValueError):
    """The event is not one the client's model of the spec can hold (the message says where)."""


def _generated_facets() -> dict[str, type[BaseFacet]]:
    """Every generated facet class by its ``_schemaURL``, the base classes left out.

    A facet naming a base class's URL (``OpenLineage.json#/$defs/RunFacet``) would be
    checked against nothing but the base fields, so it counts as unknown.
    """
    found: dict[str, type[BaseFacet]] = {}
    for module in pkgutil.iter_modules(generated.__path__):
        if module.name == "base":
            continue
        loaded = importlib.import_module(f"{generated.__name__}.{module.name}")
        for value in vars(loaded).values():
            if isinstance(value, type) and issubclass(value, BaseFacet) and \
                    value.__module__ == loaded.__name__:
                found[value._get_schema()] = value
    return found


FACETS = _generated_facets()


def validate_event(event: Mapping[str, Any]) -> RunEvent:
    """The client's ``RunEvent`` of ``event``; raise :class:`InvalidEvent` unless valid."""
    rebuilt = _structure(event, RunEvent, "event")
    assert isinstance(rebuilt, RunEvent)
    try:
        offset = datetime.fromisoformat(event["eventTime"]).utcoffset()
    except ValueError:
        offset = None
    if offset is None:
        raise InvalidEvent(f"event.eventTime: no UTC offset in {event['eventTime']!r}")
    _same(Serde.to_dict(rebuilt), event, "event")
    return rebuilt


def _structure(value: Any, hint: Any, path: str) -> Any:
    """``value`` (parsed JSON) as an instance of the annotation ``hint``."""
    if hint is Any:
        return value
    if value is None:
        raise InvalidEvent(f"{path}: null (the spec gives it a type)")
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (types.UnionType, typing.Union):
        return _one_of(value, [arg for arg in args if arg is not type(None)], path)
    if origin is typing.Literal:
        if value not in args:
            raise InvalidEvent(f"{path}: {value!r} is not one of {args}")
        return value
    if origin is list:
        _expect(value, list, path)
        return [_structure(item, args[0], f"{path}[{i}]") for i, item in enumerate(value)]
    if origin is dict:
        _expect(value, dict, path)
        return {_expect(key, str, path): _structure(item, args[1], f"{path}.{key}")
                for key, item in value.items()}
    if isinstance(hint, type) and issubclass(hint, Enum):
        try:
            return hint(value)
        except ValueError:
            raise InvalidEvent(f"{path}: {value!r} is not a {hint.__name__}") from None
    if isinstance(hint, type) and attrs.has(hint):
        if issubclass(hint, BaseFacet):
            return _facet(value, hint, path)
        return _build(value, hint, path)
    if hint in (str, bool):
        return _expect(value, hint, path)
    if hint in (int, float):
        allowed = int if hint is int else (int, float)
        if isinstance(value, bool) or not isinstance(value, allowed):
            raise InvalidEvent(f"{path}: {value!r} is not a JSON {hint.__name__}")
        return value
    raise InvalidEvent(f"{path}: the client's annotation {hint!r} is not one this knows")


def _one_of(value: Any, options: list[Any], path: str) -> Any:
    errors = []
    for option in options:
        try:
            return _structure(value, option, path)
        except InvalidEvent as error:
            errors.append(str(error))
    raise InvalidEvent("; ".join(errors))


def _expect(value: Any, kind: type | tuple[type, ...], path: str) -> Any:
    if not isinstance(value, kind):
        raise InvalidEvent(f"{path}: {type(value).__name__} {value!r} where {kind} is due")
    return value


def _facet(value: Any, kind: type[BaseFacet], path: str) -> Any:
    """A facet of ``kind`` (a run facet...): the generated class its ``_schemaURL`` names."""
    _expect(value, dict, path)
    url = value.get("_schemaURL")
    if isinstance(url, str) and url.startswith(OWN_FACET_PREFIX):
        _expect(value.get("_producer"), str, f"{path}._producer")
        _build({"_producer": value["_producer"]}, kind, path)  # the base facet's checks
        return dict(value)  # its own fields are Headwater's to define
    found = FACETS.get(url) if isinstance(url, str) else None
    if found is None:
        raise InvalidEvent(f"{path}: _schemaURL {url!r} is no facet of the client's model")
    if not issubclass(found, kind):
        raise InvalidEvent(f"{path}: {found.__name__} is not a {kind.__name__}")
    return _build(value, found, path)


def _build(value: Any, cls: type, path: str) -> Any:
    """An instance of the ``attrs`` class ``cls`` from the JSON object ``value``."""
    _expect(value, dict, path)
    fields = attrs.fields(attrs.resolve_types(cls))
    arguments = {}
    for field in fields:
        if not field.init:
            continue  # schemaURL/_schemaURL: the class sets its own (compared after)
        if field.name in value:
            arguments[field.alias] = _structure(value[field.name], field.type,
                                                f"{path}.{field.name}")
        elif field.default is attrs.NOTHING:
            raise InvalidEvent(f"{path}: {field.name} is missing")
    extra = {key: item for key, item in value.items() if key not in {f.name for f in fields}}
    if extra and not issubclass(cls, BaseFacet):
        raise InvalidEvent(f"{path}: {sorted(extra)} are not fields of {cls.__name__}")
    try:
        built = cls(**arguments)
    except (TypeError, ValueError) as error:
        raise InvalidEvent(f"{path}: {cls.__name__}: {error}") from None
    return built.with_additional_properties(**extra) if extra else built


def _same(rebuilt: Any, received: Any, path: str) -> None:
    """Raise at the first place the round trip through the client's model changed."""
    if isinstance(received, dict) and isinstance(rebuilt, dict):
        for key in received.keys() | rebuilt.keys():
            if key not in rebuilt or key not in received:
                side = "dropped" if key in received else "added"
                raise InvalidEvent(f"{path}.{key}: {side} by the round trip through the model")
            _same(rebuilt[key], received[key], f"{path}.{key}")
    elif isinstance(received, list) and isinstance(rebuilt, list) and \
            len(received) == len(rebuilt):
        for i, (mine, theirs) in enumerate(zip(rebuilt, received, strict=True)):
            _same(mine, theirs, f"{path}[{i}]")
    elif json.dumps(rebuilt) != json.dumps(received):
        raise InvalidEvent(f"{path}: {received!r} came back as {rebuilt!r}")
