"""``after_sync`` hooks: real commands, the run's summary in their environment, never a secret."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from headwater.config import ConnectionConfig, register_secrets
from headwater.engine import StreamStats, SyncResult
from headwater.engine._hooks import run_after_sync_hooks, summary_env

SECRET = "hook-secret-Zk81QpW3"


def connection(hooks: list[object]) -> ConnectionConfig:
    return ConnectionConfig.model_validate(
        {"name": "hooked", "source": {"type": "sample"}, "after_sync": hooks})


def result(status: str = "succeeded") -> SyncResult:
    stream = StreamStats(name="users", mode="incremental+append", status=status,
                         records_read=12, records_written=12, records_rejected=1, bytes=340,
                         error=None if status == "succeeded" else f"token {SECRET} refused")
    return SyncResult(run_id="20260101T000000Z-abc123", connection="hooked", status=status,
                      resumed=False, attempt=1, streams=[stream], duration_s=1.5)


def dump_env(target: Path) -> list[str]:
    code = ("import json, os, sys; json.dump({k: v for k, v in os.environ.items() "
            "if k.startswith('HEADWATER_')}, open(sys.argv[1], 'w'))")
    return [sys.executable, "-c", code, str(target)]


def test_a_hook_sees_the_summary_and_no_secret(tmp_path: Path) -> None:
    register_secrets([SECRET])
    out = tmp_path / "env.json"
    outcomes = run_after_sync_hooks(connection([{"command": dump_env(out), "when": "always"}]),
                                    result("failed"))
    assert outcomes == [{"command": " ".join(dump_env(out)), "exit_code": 0}]
    seen = json.loads(out.read_text())
    assert seen["HEADWATER_RUN_ID"] == "20260101T000000Z-abc123"
    assert seen["HEADWATER_RUN_STATUS"] == "failed"
    assert seen["HEADWATER_FAILED_STREAMS"] == "users"
    assert seen["HEADWATER_RECORDS_REJECTED"] == "1"
    assert json.loads(seen["HEADWATER_SUMMARY_JSON"])["streams"][0]["records_written"] == 12
    assert SECRET not in out.read_text()


def test_hooks_run_only_when_they_apply(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    hooks = [f"echo success >> {marker}", {"command": f"echo failure >> {marker}",
                                           "when": "failure"}]
    hooks.append({"command": f"echo always >> {marker}", "when": "always"})
    run_after_sync_hooks(connection(hooks), result("succeeded"))
    run_after_sync_hooks(connection(hooks), result("failed"))
    # A stopped run (the next sync continues it) is neither: only `always` hooks run.
    run_after_sync_hooks(connection(hooks), result("stopped"))
    # A warned run committed and finished: `success` hooks run (on_warning: fail fails it).
    run_after_sync_hooks(connection(hooks), result("warned"))
    assert marker.read_text().split() == ["success", "always", "failure", "always", "always",
                                          "success", "always"]


def test_a_failing_or_slow_hook_is_reported_not_raised() -> None:
    hooks = ["echo broken >&2; exit 4", {"command": "sleep 5", "timeout_s": 0.2}]
    outcomes = run_after_sync_hooks(connection(hooks), result())
    assert outcomes[0]["exit_code"] == 4 and outcomes[0]["error"] == "broken"
    assert outcomes[1]["exit_code"] is None and "timed out" in outcomes[1]["error"]


def test_summary_env_masks_registered_secrets() -> None:
    register_secrets([SECRET])
    env = summary_env(result("failed"))
    assert all(SECRET not in value for value in env.values())
    assert "refused" in env["HEADWATER_SUMMARY_JSON"]
