"""Reading a connection file's YAML once into both its data and the line of every field,
so every later check (the models, the connector's spec, the catalog) can name the line."""

from __future__ import annotations

from typing import Any

import yaml

from headwater.config._paths import format_path
from headwater.errors import ConfigError


def parse_with_lines(text: str, where: str) -> tuple[Any, dict[str, int]]:
    """Parse YAML once into both the data and the line of every field path."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, {}
        lines: dict[str, int] = {}
        _map_lines(node, (), lines, where, set())
        return loader.construct_document(node), lines
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        # exc.problem / exc.context describe the mistake; str(exc) also quotes
        # the offending line of the file, which may hold a secret that is not
        # registered with the masker yet, so the YAML error is not chained
        # (a traceback would print it).
        what = ", ".join(part for part in (exc.problem, exc.context) if part)
        raise ConfigError(
            f"cannot parse the connection file: {what or 'invalid YAML'}",
            file=where,
            line=mark.line + 1 if mark else None,
            column=mark.column + 1 if mark else None,
        ) from None
    except yaml.YAMLError:
        raise ConfigError("cannot parse the connection file as YAML", file=where) from None
    finally:
        loader.dispose()


def _map_lines(
    node: yaml.Node,
    path: tuple[str | int, ...],
    lines: dict[str, int],
    where: str,
    ancestors: set[int],
) -> None:
    """Record the line of every key and list item; refuse duplicate keys.

    PyYAML silently keeps the last of two equal keys, which hides a
    copy-paste mistake in a file people edit by hand.
    """
    if id(node) in ancestors:  # an alias pointing back at its own parent
        return
    lines.setdefault(format_path(path), node.start_mark.line + 1)
    ancestors = ancestors | {id(node)}
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.value == "<<":
                continue
            child = (*path, key_node.value)
            if key_node.value in seen:
                raise ConfigError(
                    f"duplicate key {key_node.value!r}: YAML would silently keep only the last one",
                    file=where,
                    field=format_path(child),
                    line=key_node.start_mark.line + 1,
                )
            seen.add(key_node.value)
            lines[format_path(child)] = key_node.start_mark.line + 1
            _map_lines(value_node, child, lines, where, ancestors)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _map_lines(item, (*path, index), lines, where, ancestors)
