"""Run the CLI in the test's process with its whole log in the output, to look for secrets.

The CLI replaces the root logger's handlers (``cli/_common.setup_logging``), so
pytest's ``caplog`` hears nothing of a CLI run: a secret check on ``caplog.text``
passes whatever the CLI logs.  ``-vv`` writes every line, DEBUG up, to the
output the test already searches.
"""

from __future__ import annotations

from collections.abc import Sequence

from typer.testing import CliRunner, Result

from headwater.cli.app import app


def invoke_logged(args: Sequence[str]) -> Result:
    """``headwater ARGS -vv``; fails the test when no DEBUG line reached the output."""
    done = CliRunner().invoke(app, [*args, "-vv"])
    assert "DEBUG" in done.output, done.output
    return done
