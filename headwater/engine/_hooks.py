"""``after_sync`` hooks: hand a finished run over to the next tool (``dbt build``, a notifier).

Each hook of the connection file runs once the run is recorded and the
connection's lock released, with the run's summary in environment variables:

=============================  ==============================================
``HEADWATER_RUN_ID``           the run's id (``headwater runs show`` it)
``HEADWATER_CONNECTION``       the connection's name
``HEADWATER_RUN_KIND``         ``sync``, ``backfill`` or ``replay``
``HEADWATER_RUN_STATUS``       ``succeeded``, ``failed`` or ``stopped``
``HEADWATER_RECORDS_READ``     totals over every stream
``HEADWATER_RECORDS_WRITTEN``
``HEADWATER_RECORDS_REJECTED``
``HEADWATER_BYTES``
``HEADWATER_DURATION_S``
``HEADWATER_STREAMS``          comma-separated stream names
``HEADWATER_FAILED_STREAMS``   comma-separated, empty when none failed
``HEADWATER_SUMMARY_JSON``     the whole summary, as ``sync --json`` prints it
=============================  ==============================================

Every value goes through the secret masker first: a secret of the source's
config never reaches a hook through these variables.  (The hook inherits the
rest of the process's environment, which is where its own credentials come
from.)  A string command runs through ``/bin/sh -c``; a list runs as is.
A hook that fails or times out is logged and reported in the result; it never
turns a run that committed its data into a failed one.  A ``stopped`` run
(asked to stop, the next sync continues it) is neither a success nor a
failure: only ``when: always`` hooks run after it.

Hooks with ``when: late`` or ``when: stale`` run after no run: ``headwater serve``
runs them when the connection becomes late or a stream becomes stale
(:mod:`headwater.observability.health`, :class:`headwater.serve.HealthWatch`), once
per change, with ``HEADWATER_EVENT`` (``late`` / ``stale``), ``HEADWATER_CONNECTION``,
``HEADWATER_LATE_SINCE`` and ``HEADWATER_LATE_S`` (the firing that passed without a
run and its age, empty when not late) and ``HEADWATER_STALE_STREAMS``
(``stream=freshness_s`` pairs, comma-separated).
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
from typing import TYPE_CHECKING, Any

from headwater.config import mask, mask_obj

if TYPE_CHECKING:
    from headwater.config import ConnectionConfig
    from headwater.engine._results import SyncResult
    from headwater.observability.health import ConnectionHealth

log = logging.getLogger(__name__)

#: The last characters of a failed hook's output kept in its result.
_OUTPUT_TAIL = 2000


def summary_env(result: SyncResult) -> dict[str, str]:
    """The ``HEADWATER_*`` variables of a run's summary (masked)."""
    streams = result.streams
    summary = result.to_dict()
    summary.pop("hooks", None)
    values = {
        "HEADWATER_RUN_ID": result.run_id,
        "HEADWATER_CONNECTION": result.connection,
        "HEADWATER_RUN_KIND": result.kind,
        "HEADWATER_RUN_STATUS": result.status,
        "HEADWATER_RECORDS_READ": str(sum(s.records_read for s in streams)),
        "HEADWATER_RECORDS_WRITTEN": str(sum(s.records_written for s in streams)),
        "HEADWATER_RECORDS_REJECTED": str(sum(s.records_rejected for s in streams)),
        "HEADWATER_BYTES": str(sum(s.bytes for s in streams)),
        "HEADWATER_DURATION_S": f"{result.duration_s:.3f}",
        "HEADWATER_STREAMS": ",".join(s.name for s in streams),
        "HEADWATER_FAILED_STREAMS": ",".join(s.name for s in streams if s.status == "failed"),
        "HEADWATER_SUMMARY_JSON": json.dumps(mask_obj(summary), default=str, sort_keys=True),
    }
    return {key: mask(value) for key, value in values.items()}


def run_after_sync_hooks(connection: ConnectionConfig, result: SyncResult) -> list[dict[str, Any]]:
    """Run the connection's hooks that apply to ``result``; return what each did."""
    hooks = connection.after_sync
    outcomes: list[dict[str, Any]] = []
    if not hooks:
        return outcomes
    env = {**os.environ, **summary_env(result)}
    applies = {"succeeded": ("success", "always"), "warned": ("success", "always"),
               "failed": ("failure", "always")}
    for hook in hooks:
        if hook.when not in applies.get(result.status, ("always",)):
            continue
        outcomes.append(_run_hook(hook.command, hook.timeout_s, env))
    return outcomes


def run_health_hooks(connection: ConnectionConfig, event: str,
                     health: ConnectionHealth) -> list[dict[str, Any]]:
    """Run the connection's ``when: <event>`` hooks (``late`` or ``stale``); what each did."""
    hooks = [h for h in connection.after_sync if h.when == event]
    if not hooks:
        return []
    values = {
        "HEADWATER_EVENT": event,
        "HEADWATER_CONNECTION": connection.name,
        "HEADWATER_LATE_SINCE": health.late.since.isoformat() if health.late else "",
        "HEADWATER_LATE_S": f"{health.late.age_s:.0f}" if health.late else "",
        "HEADWATER_STALE_STREAMS": ",".join(f"{s.stream}={s.freshness_s:.0f}"
                                            for s in health.stale),
    }
    env = {**os.environ, **{key: mask(value) for key, value in values.items()}}
    return [_run_hook(hook.command, hook.timeout_s, env) for hook in hooks]


def _run_hook(command: str | list[str], timeout_s: float, env: dict[str, str]) -> dict[str, Any]:
    shown = mask(command if isinstance(command, str) else " ".join(command))
    argv = ["/bin/sh", "-c", command] if isinstance(command, str) else list(command)
    outcome: dict[str, Any] = {"command": shown}
    try:
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=timeout_s,
                              check=False)
    except subprocess.TimeoutExpired:
        log.error("after_sync hook %r did not finish within %s s and was stopped", shown,
                  timeout_s)
        return {**outcome, "exit_code": None, "error": f"timed out after {timeout_s} s"}
    except OSError as exc:
        log.error("after_sync hook %r could not start: %s", shown, mask(str(exc)))
        return {**outcome, "exit_code": None, "error": mask(str(exc))}
    outcome["exit_code"] = done.returncode
    if done.returncode != 0:
        tail = mask((done.stderr or done.stdout or "")[-_OUTPUT_TAIL:])
        outcome["error"] = tail.strip() or f"exited with {done.returncode}"
        log.error("after_sync hook %r exited with %d: %s", shown, done.returncode,
                  outcome["error"])
    else:
        log.info("after_sync hook %r succeeded", shown)
    return outcome


__all__ = ["run_after_sync_hooks", "run_health_hooks", "summary_env"]
