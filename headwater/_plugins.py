"""Classes by type name, for sources and destinations alike: built-ins and plugins.

A connection file names its ``source.type`` and ``destination.type``; built-ins
come first, so an installed package can never replace one; other packages
register theirs under an entry point group (``headwater.sources``,
``headwater.destinations``).  Classes are imported only when asked for, so
listing types stays cheap.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from headwater.errors import ConfigError, ConnectorError


def registered_types(built_ins: Mapping[str, str], group: str) -> list[str]:
    """Every known type name, sorted: built-ins and installed entry points."""
    return sorted(built_ins.keys() | _installed(group).keys())


def load_registered(type_name: str, built_ins: Mapping[str, str], group: str,
                    base: type, *, kind: str, base_name: str) -> Any:
    """The class registered as ``type_name``: a :class:`ConfigError` listing the known
    types when there is none, a :class:`ConnectorError` when it cannot be imported or
    is not a ``base`` (``base_name``, its public name).  ``kind`` (``source``,
    ``destination``) names the config field."""
    where = f"{kind}.type"
    if type_name in built_ins:
        entry = EntryPoint(type_name, built_ins[type_name], group)
    else:
        installed = _installed(group)
        if type_name not in installed:
            known = ", ".join(registered_types(built_ins, group))
            raise ConfigError(f"unknown {kind} type {type_name!r}; known types: {known}",
                              field=where)
        entry = installed[type_name]
    try:
        loaded = entry.load()
    except Exception as exc:  # a broken plugin may raise anything while importing
        raise ConnectorError(f"{kind} type {type_name!r} ({entry.value}) could not be "
                             f"imported: {exc}", field=where) from exc
    if not (isinstance(loaded, type) and issubclass(loaded, base)):
        raise ConnectorError(f"{kind} type {type_name!r} points at {entry.value}, which is "
                             f"not a {base_name} subclass", field=where)
    return loaded


def _installed(group: str) -> dict[str, EntryPoint]:
    return {entry.name: entry for entry in entry_points(group=group)}
