"""What a ``headwater`` command's end, or a run's status, means for an orchestrator's task.

Written for the Airflow operator and sensor (:mod:`headwater.integrations.airflow`
turns these answers into Airflow's exceptions), and free of any orchestrator's
import, so the rules are tested without Airflow installed.

A ``stopped`` run is not a failed one: it was asked to stop (SIGTERM or
SIGINT, say a deploy restarting the worker), committed what was in flight,
and stays unfinished under its run id until the next ``headwater sync`` of
the connection resumes it.  Hence:

* the operator still fails its task attempt on a stopped run (downstream
  tasks must not read a half-synced table), but with its own exception and a
  message that says so and what resumes it: a retry of a ``sync`` task does;
  a ``replay`` or ``backfill`` is finished by the next ``sync``, and until
  then a retry of that task is refused;
* the sensor treats a stopped run like a running one: it keeps waiting,
  since the resumed run keeps the run id it waits for (its ``timeout``
  bounds the wait).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from headwater.errors import ExitCode

#: Exit codes of the ``headwater`` command (:class:`~headwater.errors.ExitCode`).
_EXIT_MEANING: dict[int, str] = {
    ExitCode.FAILED: "the run failed",
    ExitCode.CONFIG: "the connection file or a config is wrong",
    ExitCode.AUTHENTICATION: "credentials were refused",
    ExitCode.WARNED: "the run warned",
    ExitCode.STOPPED: "interrupted (the next sync resumes the run)",
}

#: What a sensor does about a run's status.
Verdict = Literal["wait", "succeeded", "failed"]


def is_stopped(code: int, document: Mapping[str, Any]) -> bool:
    """The command's run was stopped on request (exit 130 with a ``stopped`` summary)."""
    return code == ExitCode.STOPPED and document.get("status") == "stopped"


def stopped_message(document: Mapping[str, Any], command: str, connection_file: str) -> str:
    """Why the task did not succeed though the run did not fail, and what finishes the run."""
    reason = document.get("stop_reason") or "stopped on request"
    if command == "sync":
        then = "A retry of this task resumes it."
    else:
        then = (f"`headwater sync {connection_file}` finishes this {command}; until then a "
                "retry of this task is refused.")
    return f"headwater run {document.get('run_id')} stopped, it did not fail: {reason}. {then}"


def failure_message(code: int, document: Mapping[str, Any]) -> str:
    """The failed command's meaning, with its error or its failed streams' errors."""
    meaning = _EXIT_MEANING.get(code, f"exit code {code}")
    if "error" in document:
        return f"headwater: {meaning}: {document['error'].get('message')}"
    failed = [f"{s['name']}: {s.get('error')}" for s in document.get("streams", [])
              if s.get("status") not in ("succeeded", "warned")]
    return f"headwater run {document.get('run_id')}: {meaning}: {'; '.join(failed)}"


def warned_message(document: Mapping[str, Any]) -> str:
    """Each warned stream's warnings, ``stream: warning; ...``."""
    return "; ".join(f"{s['name']}: {w}" for s in document.get("streams", [])
                     for w in s.get("warnings", ()))


def sensor_verdict(status: str) -> Verdict:
    """``running`` and ``stopped`` (resumed later, same run id) wait; ``failed`` fails."""
    if status in ("running", "stopped"):
        return "wait"
    return "succeeded" if status in ("succeeded", "warned") else "failed"


__all__ = ["Verdict", "failure_message", "is_stopped", "sensor_verdict", "stopped_message",
           "warned_message"]
