"""The ``headwater`` command.

Exit codes mean the same everywhere: 0 success, 1 the sync (or check) failed,
2 the connection file or a config is wrong, 3 credentials were refused,
4 warned (a sync whose result looks wrong; ``verify``: a stream could not be verified),
130 interrupted (a sync, replay or backfill stopped by SIGINT/SIGTERM: the next sync
continues it).
``--json`` prints exactly one JSON document on stdout (nothing else goes to
stdout then); every message is masked for secrets before it is printed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import typer

from headwater.cli import (
    _airbyte,
    _leave,
    _plan_cmd,
    _rerun,
    _runs_cmd,
    _serve,
    _source_cmds,
    _state_cmd,
    _sync_cmd,
    _ui,
    _validate,
    _verify_cmd,
)

app = typer.Typer(
    name="headwater",
    help="Sync APIs, databases and object storage into lakehouse tables, on Spark.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
runs_app = typer.Typer(help="Run history: list runs, or show one.", invoke_without_command=True)
state_app = typer.Typer(help="Show or reset the state of a connection's streams.",
                        no_args_is_help=True)
app.add_typer(runs_app, name="runs")
app.add_typer(state_app, name="state")

# In the order ``headwater --help`` lists them.
_sync_cmd.register(app)
_source_cmds.register(app)  # check, discover
_runs_cmd.register(runs_app)  # runs, runs show
_state_cmd.register(state_app)  # state show, reset, realign
_rerun.register(app)  # replay, backfill
_verify_cmd.register(app)
_plan_cmd.register(app)
_validate.register(app)
_serve.register(app)
_ui.register(app)
# Airbyte interop: `headwater airbyte SOURCE ...`, `headwater state import|export`.
app.command("airbyte")(_airbyte.airbyte)
state_app.command("import")(_airbyte.state_import)
state_app.command("export")(_airbyte.state_export)


def main(argv: list[str] | None = None) -> Callable[..., Any] | None:
    """Console-script entry point.

    A command that said its work is durable and printed (``_leave.done``)
    ends the process without the interpreter's teardown (:mod:`._leave`).
    """
    _leave.reset()
    try:
        app(args=argv)
    except SystemExit as exit_:
        if _leave.ready() and (exit_.code is None or isinstance(exit_.code, int)):
            _leave.leave(exit_.code or 0)
        raise
    return None


if __name__ == "__main__":
    main()
