"""What every ``headwater`` command shares: the consoles, the common options, where the
metadata store is, logging, ``--json`` output, error handling and Spark settings.

The command modules import this one and never ``app``, which only assembles
them: no module imports the one that imports it.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.logging import RichHandler

from headwater.config import install_log_masking, mask, mask_obj
from headwater.errors import ExitCode, HeadwaterError

# Wide enough for the summary table when output is piped (rich assumes 80 columns).
out = Console(width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, width=None if sys.stderr.isatty() else 160)

ConnectionArg = Annotated[Path, typer.Argument(help="Connection YAML file.",
                                               metavar="CONNECTION.yaml")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout.")]
VerboseOpt = Annotated[int, typer.Option("--verbose", "-v", count=True, help="More logging.")]
MasterOpt = Annotated[str | None, typer.Option(
    help="Spark master URL, e.g. spark://host:7077.")]
RemoteOpt = Annotated[str | None, typer.Option(
    help="Spark Connect URL, e.g. sc://host:15002.")]
ConfOpt = Annotated[list[str] | None, typer.Option("--conf", help="Extra Spark conf KEY=VALUE.")]


def setup_logging(verbose: int, as_json: bool) -> None:
    level = logging.WARNING if verbose == 0 else logging.INFO if verbose == 1 else logging.DEBUG
    root = logging.getLogger()
    root.handlers.clear()
    handler = RichHandler(console=err, show_path=False, rich_tracebacks=False)
    # The console's own level: a run's capture lets Headwater's INFO lines through to
    # keep them with the run (engine._run_logs), which this console must not print.
    handler.setLevel(level)
    root.addHandler(handler)
    root.setLevel(level)
    for noisy in ("py4j", "pyspark"):
        logging.getLogger(noisy).setLevel(logging.ERROR)
    install_log_masking()


def emit_json(document: Any) -> None:
    sys.stdout.write(mask(json.dumps(mask_obj(document), default=str, indent=2)) + "\n")
    sys.stdout.flush()


#: How the text output names a failure, by exit code (anything else: "Error").
FAILURE_LABELS: dict[int, str] = {ExitCode.CONFIG: "Config error",
                                  ExitCode.AUTHENTICATION: "Authentication failed"}


def describe(exc: BaseException) -> dict[str, Any]:
    """``exc`` as the ``error`` object of ``--json`` output: type, masked message, exit code."""
    kind = type(exc).__name__
    if isinstance(exc, HeadwaterError):
        code, message = int(exc.exit_code), str(exc)
    else:
        code, message = int(ExitCode.FAILED), f"{kind}: {exc}"
    return {"type": kind, "message": mask(message), "exit_code": code}


def fail(exc: BaseException, as_json: bool) -> NoReturn:
    error = describe(exc)
    code, message = error["exit_code"], error["message"]
    if as_json:
        emit_json({"status": "error", "error": error})
    else:
        label = FAILURE_LABELS.get(code, "Error")
        err.print(f"[bold red]{label}:[/] {message}", highlight=False, markup=True)
    raise typer.Exit(code)


@contextmanager
def handled(as_json: bool) -> Iterator[None]:
    try:
        yield
    except typer.Exit:
        raise
    except KeyboardInterrupt:
        err.print("[yellow]interrupted[/]")
        raise typer.Exit(ExitCode.STOPPED) from None
    except Exception as exc:
        logging.getLogger("headwater").debug("command failed", exc_info=True)
        fail(exc, as_json)
