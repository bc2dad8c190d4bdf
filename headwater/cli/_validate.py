"""``headwater validate``: check connection files against their connectors' specs, offline.

Meant for the CI of a repository of connections: nothing connects to a
source or destination, nothing is planned.  Each file is loaded as ``sync``
loads it (YAML, environment interpolation, the file's own structure,
``schedule`` and ``after_sync``), then its source and destination configs are
checked against the connectors' specs.  Every problem is printed as
``FILE:LINE: FIELD: message`` (the form editors and CI annotators link to).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any

import typer

from headwater.cli import _common as opt
from headwater.config import load_connection, mask, validate_config
from headwater.errors import ConfigError, ExitCode, HeadwaterError, SpecValidationError

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


def validate(
    paths: Annotated[list[Path], typer.Argument(help="Connection files or folders of them.",
                                                metavar="PATH...")],
    as_json: opt.JsonOpt = False,
) -> None:
    """Check connection files against their connectors' specs without connecting."""
    from headwater.cli import _common as cli
    with cli.handled(as_json):
        files = connection_files(paths)
        if not files:
            raise ConfigError("no connection files (*.yaml, *.yml) found", field="PATH")
        results = {str(f): validate_file(f) for f in files}
        problems = [p for found in results.values() for p in found]
        if as_json:
            cli.emit_json({"status": "failed" if problems else "succeeded",
                            "files": len(files), "problems": problems})
        else:
            for problem in problems:
                where = ":".join(str(x) for x in (problem["file"], problem["line"]) if x)
                field = f" {problem['field']}:" if problem["field"] else ""
                cli.out.print(f"{where}:{field} {problem['message']}", highlight=False,
                              markup=False)
            bad = sum(1 for found in results.values() if found)
            summary = (f"{len(files)} file(s) checked, {bad} with problems ({len(problems)})"
                       if problems else f"{len(files)} file(s) checked: all valid")
            (cli.err if problems else cli.out).print(summary, highlight=False, markup=False)
        if problems:
            raise typer.Exit(ExitCode.CONFIG)


def register(app: typer.Typer) -> None:
    app.command()(validate)
