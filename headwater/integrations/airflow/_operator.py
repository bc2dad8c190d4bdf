"""``HeadwaterSyncOperator``: run a sync (or a backfill or replay) from an Airflow task."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

from headwater.errors import ExitCode
from headwater.integrations._outcome import (
    failure_message,
    is_stopped,
    stopped_message,
    warned_message,
)
from headwater.integrations.airflow._compat import AirflowException, BaseOperator


class HeadwaterRunStopped(AirflowException):
    """The run was stopped on request (SIGTERM/SIGINT) before it finished; it did not fail.

    What it committed stays, and the run stays unfinished under its run id:
    the next ``headwater sync`` of the connection resumes it (so a retry of a
    ``sync`` task does).  The task attempt still fails, since downstream
    tasks must not read a half-synced table; catch this type in a callback
    (``context["exception"]``) to tell a stop from a failure.
    """


class HeadwaterSyncOperator(BaseOperator):
    """Run ``headwater COMMAND CONNECTION --json`` and return its summary.

    ``command`` is ``sync`` (default), or ``backfill`` / ``replay`` with their
    arguments in ``arguments`` (``["--stream", "orders", "--from", "{{ ds }}",
    "--to", "{{ next_ds }}"]`` backfills the task's interval; ``["RUN_ID"]``
    replays that run of the connection).  The return
    value (the ``--json`` document, already masked of secrets) goes to XCom.
    The task fails when the run fails, naming the streams and their errors.  A
    ``warned`` run (exit code 4: a stream's every record rejected, or its table's
    columns no longer written) succeeds with its warnings logged; ``on_warning:
    fail`` in the connection file makes it a failed run.

    A run stopped on request (``headwater`` got SIGTERM or SIGINT: exit code
    130, status ``stopped``) has not failed, but has not finished either: the
    task raises :class:`HeadwaterRunStopped`, whose message says so and what
    resumes it.  For ``command="sync"`` a retry of the task resumes the run;
    a stopped ``backfill`` or ``replay`` is finished by the connection's next
    ``sync``, and a retry of its task is refused until then.
    """

    template_fields: Sequence[str] = ("connection_file", "arguments", "env", "cwd")
    ui_color = "#7fb4d9"

    def __init__(self, *, connection_file: str, command: str = "sync",
                 arguments: Sequence[str] = (), headwater_bin: str = "headwater",
                 env: Mapping[str, str] | None = None, cwd: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if command not in ("sync", "backfill", "replay"):
            raise ValueError(f"command must be sync, backfill or replay, got {command!r}")
        self.connection_file = connection_file
        self.command = command
        self.arguments = list(arguments)
        self.headwater_bin = headwater_bin
        self.env = dict(env or {})
        self.cwd = cwd

    def execute(self, context: Any) -> dict[str, Any]:
        if self.command == "replay":  # `headwater replay RUN_ID --connection FILE`
            argv = [self.headwater_bin, "replay", *self.arguments,
                    "--connection", self.connection_file, "--json"]
        else:
            argv = [self.headwater_bin, self.command, self.connection_file, *self.arguments,
                    "--json"]
        self.log.info("running %s", " ".join(argv))
        done = subprocess.run(argv, capture_output=True, text=True, check=False, cwd=self.cwd,
                              env={**os.environ, **self.env})
        for line in done.stderr.splitlines()[-50:]:
            self.log.info("headwater: %s", line)
        try:
            document: dict[str, Any] = json.loads(done.stdout)
        except json.JSONDecodeError:
            raise AirflowException(
                f"headwater exited with {done.returncode} without a JSON summary: "
                f"{done.stderr.strip()[-2000:]}") from None
        if is_stopped(done.returncode, document):
            raise HeadwaterRunStopped(stopped_message(document, self.command,
                                                      self.connection_file))
        if done.returncode == ExitCode.WARNED and document.get("status") == "warned":
            # Committed and finished; `on_warning: fail` in the connection fails it instead.
            self.log.warning("run %s warned: %s", document.get("run_id"), warned_message(document))
            return document
        if done.returncode != 0:
            raise AirflowException(failure_message(done.returncode, document))
        self.log.info("run %s %s", document.get("run_id"), document.get("status"))
        return document


__all__ = ["HeadwaterRunStopped", "HeadwaterSyncOperator"]
