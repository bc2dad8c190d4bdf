"""``headwater airbyte sample ...``: every line it prints is a valid Airbyte message.

Runs the command in-process (it needs no Spark) and validates each stdout line
with ``airbyte-protocol-models``, the protocol's reference implementation.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from airbyte_protocol.models import AirbyteMessage as ReferenceMessage
from typer.testing import CliRunner

from headwater.cli.app import app
from headwater.connectors.sample import SampleSource

CONFIG = {"users": 40, "orders": 25, "rows_per_partition": 10, "api_key": "sample-key-7d1e"}


def _run(tmp_path: Path, *args: str, catalog: Any = None, state: Any = None,
         config: Any = CONFIG) -> tuple[int, list[dict[str, Any]]]:
    (tmp_path / "config.json").write_text(json.dumps(config))
    argv = ["airbyte", "sample", *args]
    if args[0] != "spec":
        argv += ["--config", str(tmp_path / "config.json")]
    if catalog is not None:
        (tmp_path / "catalog.json").write_text(json.dumps(catalog))
        argv += ["--catalog", str(tmp_path / "catalog.json")]
    if state is not None:
        (tmp_path / "state.json").write_text(json.dumps(state))
        argv += ["--state", str(tmp_path / "state.json")]
    result = CliRunner().invoke(app, argv)
    lines = [line for line in result.stdout.splitlines() if line.strip()]
    for line in lines:
        ReferenceMessage.model_validate_json(line)  # raises on anything not a valid message
    assert "sample-key-7d1e" not in result.stdout
    return result.exit_code, [json.loads(line) for line in lines]


def _of(messages: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [m for m in messages if m["type"] == kind]


def test_spec_check_discover(tmp_path: Path) -> None:
    code, messages = _run(tmp_path, "spec")
    assert code == 0
    (spec,) = _of(messages, "SPEC")
    assert spec["spec"]["connectionSpecification"]["properties"]["api_key"]["airbyte_secret"]
    code, messages = _run(tmp_path, "check")
    assert code == 0 and _of(messages, "CONNECTION_STATUS")[0]["connectionStatus"]["status"] \
        == "SUCCEEDED"
    code, messages = _run(tmp_path, "check", config={**CONFIG, "api_key": "invalid"})
    status = _of(messages, "CONNECTION_STATUS")[0]["connectionStatus"]
    assert status["status"] == "FAILED" and "api_key" in status["message"]
    code, messages = _run(tmp_path, "discover")
    names = [s["name"] for s in _of(messages, "CATALOG")[0]["catalog"]["streams"]]
    assert names == ["users", "orders"]


def _catalog(tmp_path: Path, mode: str) -> dict[str, Any]:
    _, messages = _run(tmp_path, "discover")
    streams = _of(messages, "CATALOG")[0]["catalog"]["streams"]
    return {"streams": [{"stream": s, "sync_mode": mode, "destination_sync_mode": "append",
                         "cursor_field": ["updated_at"]} for s in streams]}


def test_read_full_refresh_prints_every_record_and_a_final_state_per_stream(
        tmp_path: Path) -> None:
    code, messages = _run(tmp_path, "read", catalog=_catalog(tmp_path, "full_refresh"))
    assert code == 0
    source = SampleSource(CONFIG)
    for name in ("users", "orders"):
        ids = sorted(m["record"]["data"]["id"] for m in _of(messages, "RECORD")
                     if m["record"]["stream"] == name)
        assert ids == source.expected_rows(name).column("id").to_pylist()
        states = [m for m in _of(messages, "STATE")
                  if m["state"]["stream"]["stream_descriptor"]["name"] == name]
        assert [s["state"]["stream"]["stream_state"] for s in states] == \
            [{"__ab_full_refresh_sync_complete": True}]


def test_read_incremental_checkpoints_per_partition_and_resumes_from_its_state(
        tmp_path: Path) -> None:
    catalog = _catalog(tmp_path, "incremental")
    code, messages = _run(tmp_path, "read", catalog=catalog)
    assert code == 0
    user_states = [m["state"] for m in _of(messages, "STATE")
                   if m["state"]["stream"]["stream_descriptor"]["name"] == "users"]
    assert len(user_states) == 4  # 40 users, 10 per partition: one STATE per partition
    assert sum(s["sourceStats"]["recordCount"] for s in user_states) == 40
    # Resume after the second STATE: exactly the records of the last two partitions follow.
    code, again = _run(tmp_path, "read", catalog=catalog, state=[user_states[1]])
    users_again = [m for m in _of(again, "RECORD") if m["record"]["stream"] == "users"]
    assert len(users_again) == 20
    # A generation later, only what changed is read.
    code, later = _run(tmp_path, "read", catalog=catalog, config={**CONFIG, "generation": 1},
                       state=[user_states[-1]])
    changed = SampleSource({**CONFIG, "generation": 1})
    users_later = [m for m in _of(later, "RECORD") if m["record"]["stream"] == "users"]
    assert 0 < len(users_later) < changed.expected_rows("users").num_rows


@pytest.mark.parametrize("args", [["read"], ["nonsense"]])
def test_errors_are_error_traces_and_a_failing_exit(tmp_path: Path, args: list[str]) -> None:
    code, messages = _run(tmp_path, *args, config={"users": -1})
    assert code == 1
    (trace,) = [m for m in _of(messages, "TRACE") if m["trace"]["type"] == "ERROR"]
    assert trace["trace"]["error"]["failure_type"] == "config_error"
