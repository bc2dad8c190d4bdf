"""Connection files of a folder and their problems, worded as ``headwater validate``
prints them: shared by ``validate`` (for CI) and the web page (which lists a file
that does not validate with its problems, rather than hiding it).

Nothing connects to a source or destination: each file is loaded as ``sync``
loads it (YAML, environment interpolation, the file's own structure,
``schedule`` and ``after_sync``), then its source and destination configs are
checked against the connectors' specs.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from headwater.config import ConnectionConfig, load_connection, mask, validate_config
from headwater.errors import ConfigError, HeadwaterError, SpecValidationError

_LINE_SUFFIX = re.compile(r"\s*\(line (\d+)\)$")


def connection_files(paths: Iterable[Path]) -> list[Path]:
    """The files named, and every ``*.yaml`` / ``*.yml`` under the folders named, sorted."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            files += sorted(p for p in path.rglob("*") if p.suffix in (".yaml", ".yml")
                            and p.is_file())
        else:
            files.append(path)
    return files


def validate_file(path: Path) -> list[dict[str, Any]]:
    """Every problem of one connection file: ``{"file", "line", "field", "message"}``."""
    from headwater.connectors import get_source_class
    from headwater.destinations import get_destination_class

    try:
        config = load_connection(path)
    except HeadwaterError as exc:
        return _problems(path, exc)
    problems: list[dict[str, Any]] = []
    checks = (("source", config.source, get_source_class),
              ("destination", config.destination, get_destination_class))
    for section, ref, lookup in checks:
        try:
            connector: Any = lookup(ref.type)
            validate_config(connector.spec(), ref.config, where=f"{section}.config",
                            source_lines=config.field_lines)
        except HeadwaterError as exc:
            found = _problems(path, exc)
            for problem in found:
                if problem["line"] is None:
                    problem["line"] = config.field_line(problem["field"] or f"{section}.type")
            problems += found
    return problems + _refused_table_properties(path, config)


def _refused_table_properties(path: Path, config: ConnectionConfig) -> list[dict[str, Any]]:
    """A problem for each stream whose ``table_properties`` the destination cannot honour."""
    from headwater.destinations import table_properties_refusal

    problems: list[dict[str, Any]] = []
    for position, stream in enumerate(config.streams or []):
        field = f"streams[{position}].table_properties"
        try:
            refused = table_properties_refusal(config.destination.type, stream.table_properties)
        except HeadwaterError:  # an unknown destination type: reported above
            return problems
        if refused is not None:
            problems.append({"file": str(path), "line": config.field_line(field),
                             "field": field, "message": mask(f"stream {stream.name!r}: {refused}")})
    return problems


def _problems(path: Path, exc: HeadwaterError) -> list[dict[str, Any]]:
    if isinstance(exc, SpecValidationError):
        found = []
        for field, expected in exc.problems:
            match = _LINE_SUFFIX.search(expected)
            found.append({"file": str(path), "line": int(match.group(1)) if match else None,
                          "field": field, "message": mask(_LINE_SUFFIX.sub("", expected))})
        if found:
            return found
    context = exc.context if isinstance(exc, ConfigError) else {}
    return [{"file": str(path), "line": context.get("line"), "field": context.get("field"),
             "message": mask(exc.message)}]
