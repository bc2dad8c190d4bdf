"""``headwater replay RUN_ID`` finds the run's connection file, or says what to pass instead."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from headwater.cli.app import app
from headwater.metadata_store import MetadataStore


def _run(store: MetadataStore, connection: str, config: dict[str, object]) -> str:
    return store.create_run(connection, plan={"connection": connection, "streams": []},
                            state_before={}, config_redacted=config)


def test_unknown_run_names_the_store_and_the_options(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'meta.db'}"
    MetadataStore(url)
    result = CliRunner().invoke(app, ["replay", "20260101T000000Z-000000", "--store", url,
                                      "--json"])
    assert result.exit_code == 2, result.output
    message = json.loads(result.stdout)["error"]["message"]
    assert "no run '20260101T000000Z-000000'" in message and "--connection" in message


def test_a_run_without_its_file_asks_for_connection(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'meta.db'}"
    run_id = _run(MetadataStore(url), "c", {"source": {"type": "sample"}})
    result = CliRunner().invoke(app, ["replay", run_id, "--store", url, "--json"])
    assert result.exit_code == 2, result.output
    assert "pass --connection FILE" in json.loads(result.stdout)["error"]["message"]


def test_a_recorded_file_that_now_holds_another_connection_is_refused(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'meta.db'}"
    path = tmp_path / "other.yaml"
    path.write_text("name: other\nsource: {type: sample}\n"
                    f"destination: {{type: delta, config: {{path: {tmp_path / 'lake'}}}}}\n")
    run_id = _run(MetadataStore(url), "c", {"connection_file": str(path)})
    result = CliRunner().invoke(app, ["replay", run_id, "--store", url, "--json"])
    assert result.exit_code == 2, result.output
    message = json.loads(result.stdout)["error"]["message"]
    assert "holds connection 'other'" in message and "belongs to 'c'" in message
