"""``headwater validate``: check connection files against their connectors' specs, offline.

Meant for the CI of a repository of connections: nothing connects to a
source or destination, nothing is planned.  Each file is loaded as ``sync``
loads it (YAML, environment interpolation, the file's own structure,
``schedule`` and ``after_sync``), then its source and destination configs are
checked against the connectors' specs.  Every problem is printed as
``FILE:LINE: FIELD: message`` (the form editors and CI annotators link to).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from headwater.cli import _common as opt
from headwater.errors import ConfigError, ExitCode
from headwater.operations import connection_files, validate_file


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
