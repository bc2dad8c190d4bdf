"""Connection files of a folder and their problems, worded as ``headwater validate``
prints them: shared by ``validate`` (for CI) and the web page (which lists a file
that does not validate with its problems, rather than hiding it).

Nothing connects to a source or destination, and the refusals are ``sync``'s own
(:func:`refusals`): each file is loaded as ``sync`` loads it (YAML, environment
interpolation, the file's own structure, ``schedule`` and ``after_sync``); its
metadata store URL must name an installed driver; its source and destination are
built as ``sync`` builds them (their specs, then what their constructors refuse);
and its streams are checked as ``sync`` resolves them, as far as the source can
tell without being reached (``Source.offline_catalog``: an Airbyte connector or a
database's tables are known only by asking them, so ``check`` finds those).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from headwater.config import ConnectionConfig, load_connection, mask, validate_config
from headwater.errors import ConfigError, HeadwaterError, SpecValidationError
from headwater.operations._settings import check_store_url

_T = TypeVar("_T")

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
    return validated_file(path)[1]


def validated_file(path: Path) -> tuple[ConnectionConfig | None, list[dict[str, Any]]]:
    """The connection file loaded (``None``: it does not load) and every problem of it:
    for a reader that keeps the config too (the page), parsed once."""
    try:
        config = load_connection(path)
    except HeadwaterError as exc:
        return None, _problems(path, exc)
    problems: list[dict[str, Any]] = []
    for section, refused in refusals(config):
        found = _problems(path, refused)
        for problem in found:
            if problem["line"] is None:
                problem["line"] = config.field_line(problem["field"] or f"{section}.type")
        problems += found
    # A source whose streams are known only when it connects (``offline_catalog = "spec"``)
    # has no streams resolved above: what the destination refuses of them is checked
    # here, once.
    said = {(p["field"], p["message"]) for p in problems}
    problems += [p for p in _refused_by_destination(path, config)
                 if (p["field"], p["message"]) not in said]
    return config, problems


def _refused_by_destination(path: Path, config: ConnectionConfig) -> list[dict[str, Any]]:
    """A problem for each stream with a setting the destination cannot honour
    (:func:`~headwater.engine.connection.destination_problem`: its layout, deletes,
    quarantine or ``table_properties``), found without the source."""
    from headwater.engine.connection import destination_problem

    problems: list[dict[str, Any]] = []
    for position, stream in enumerate(config.streams or []):
        try:
            refused = destination_problem(config.destination.type, stream)
        except HeadwaterError:  # a destination type that does not load: reported above
            return problems
        if refused is not None:
            setting, why = refused
            field = f"streams[{position}].{setting}"
            problems.append({"file": str(path), "line": config.field_line(field),
                             "field": field, "message": mask(f"stream {stream.name!r}: {why}")})
    return problems


def refusals(config: ConnectionConfig) -> list[tuple[str, HeadwaterError]]:
    """What ``sync`` would refuse of ``config`` before reading anything, found without
    reaching the source, the destination or the metadata store (the module docstring),
    each with the section of the file it is about (``source``, ``destination``,
    ``metadata_store``)."""
    from headwater.connectors import get_source_class
    from headwater.destinations import build_destination
    from headwater.engine import build_source, resolve_streams
    found: list[tuple[str, HeadwaterError]] = []

    def attempt(section: str, step: Callable[[], _T]) -> _T | None:
        try:
            return step()
        except HeadwaterError as exc:
            found.append((section, exc))
            return None

    attempt("metadata_store", lambda: check_store_url(config))
    source_class = attempt("source", lambda: get_source_class(config.source.type))
    if source_class is not None and source_class.offline_catalog == "spec":
        attempt("source", lambda: validate_config(
            source_class.spec(), config.source.config, where="source.config",
            source_lines=config.field_lines))
    elif source_class is not None:
        source = attempt("source", lambda: build_source(config))
        if source is not None:
            attempt("streams", lambda: resolve_streams(
                source, config, schemas=source_class.offline_catalog == "schemas"))
    attempt("destination", lambda: build_destination(config.destination.type,
                                                     config.destination.config))
    return found


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
