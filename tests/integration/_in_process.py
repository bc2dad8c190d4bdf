"""Run ``headwater ARGS`` inside the test process, on the shared Spark session.

A CLI subprocess costs a Python start, a JVM start and Spark's first job (about
12 CPU-seconds and 20 s on CI's machine) before it reads a row. Where the process
boundary is not what a test proves (a SIGKILL, exit codes of the real process,
signal handling), the test runs the same command through the same entry (the
typer ``app`` behind ``headwater``) in its own process: the sync finds the test
session's Spark running and uses it, as a sync under ``spark-submit`` or in a
notebook does. Everything else is as :func:`tests.integration._cli.run_cli` sets
it up: the working directory is the test's folder, ``HEADWATER_HOME`` its
``.headwater``, and faults (:data:`~tests.integration._cli.FAULT`) are installed
by :mod:`tests._faults` for the command and removed after it: a kill fault is
simulated (:class:`tests._faults.Killed`, exit code ``-9`` as a SIGKILL gives).

One command at a time: the working directory and the environment are the
process's own.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from typer.testing import CliRunner

from headwater import _events
from headwater.config import _secrets
from tests import _faults
from tests.integration._cli import FAULT, HOME, PAUSE, CliResult, json_document

_one_at_a_time = threading.Lock()


def run_in_process(tmp_path: Path, *args: str,
                   env: Mapping[str, str] | None = None) -> CliResult:
    """``headwater ARGS`` in ``tmp_path``, in this process; how it ended, as
    :class:`~tests.integration._cli.CliResult` tells it of a subprocess."""
    from headwater.cli.app import app

    extra = dict(env or {})
    fault, pause = extra.pop(FAULT, None), extra.pop(PAUSE, None)
    try:
        with _one_at_a_time, _working_in(tmp_path, {"HEADWATER_HOME": str(tmp_path / HOME),
                                                    "HEADWATER_METADATA_STORE": None,
                                                    **extra}), \
                _faults_installed(fault, pause):
            result = CliRunner().invoke(app, list(args), catch_exceptions=True)
    except _faults.Killed as killed:
        # What a SIGKILLed process leaves: an exit code, and nothing more said.
        return CliResult(-signal.SIGKILL, None, "", f"simulated kill: {killed}")
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        import traceback

        stderr += "".join(traceback.format_exception(result.exception))
    return CliResult(result.exit_code, json_document(result.stdout), result.stdout, stderr)


def sync_in_process(tmp_path: Path, connection: Path, *extra: str,
                    env: Mapping[str, str] | None = None) -> CliResult:
    """``headwater sync CONNECTION --json EXTRA...`` in this process, as
    :func:`tests.integration._cli.sync` runs it in a subprocess."""
    return run_in_process(tmp_path, "sync", str(connection), "--json", *extra, env=env)


@contextmanager
def _working_in(folder: Path, env: Mapping[str, str | None]) -> Iterator[None]:
    before_cwd = os.getcwd()
    before_env = {key: os.environ.get(key) for key in env}
    # The command sets up logging as a process does; a later test must not inherit it.
    root = logging.getLogger()
    before_logging = (root.handlers[:], root.level)
    # A new process knows no secret yet: what earlier tests registered (a PostgreSQL
    # password "headwater", say) would mask words of this command's output.
    _secrets._registry.clear()
    os.chdir(folder)
    for key, value in env.items():
        _set(key, value)
    try:
        yield
    finally:
        os.chdir(before_cwd)
        _secrets._registry.clear()
        root.handlers[:], _ = before_logging
        root.setLevel(before_logging[1])
        for key, value in before_env.items():
            _set(key, value)


def _set(key: str, value: str | None) -> None:
    if value is None:
        os.environ.pop(key, None)
    else:
        os.environ[key] = value


@contextmanager
def _faults_installed(fault: str | None, pause: str | None) -> Iterator[None]:
    from pyspark import cloudpickle

    from headwater.engine import _commit_routes

    find = _commit_routes.CommitRows.find
    # Task listeners travel to Spark's Python workers by value (as tests/_faulty_cli.py).
    cloudpickle.register_pickle_by_value(_faults)
    if fault:  # a kill fault is simulated: it raises _faults.Killed (see there)
        _faults.install_fault(fault, simulated=True)
    if pause:
        _faults.install_pause(pause)
    try:
        yield
    finally:
        _events.clear()
        _commit_routes.CommitRows.find = find  # type: ignore[method-assign]
