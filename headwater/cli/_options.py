"""Argument and option types the command modules share.

The same declarations as ``app.py``'s; they live here too so a command module
never imports ``app`` at import time (``app`` imports the command modules, and
a module imported first on its own would otherwise find ``app`` half-built).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

ConnectionArg = Annotated[Path, typer.Argument(help="Connection YAML file.",
                                               metavar="CONNECTION.yaml")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]
VerboseOpt = Annotated[int, typer.Option("--verbose", "-v", count=True, help="More logging.")]
