"""``headwater plan``: partitions, bounds, estimates and state, with nothing read or written."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import yaml
from typer.testing import CliRunner

from headwater.cli.app import app
from headwater.connectors.sample import SampleSource
from headwater.metadata_store import FIRST_CHECKPOINT_INDEX, MetadataStore

SOURCE = {"users": 2500, "orders": 1200, "rows_per_partition": 1000, "generation": 1}


def write(tmp_path: Path) -> Path:
    path = tmp_path / "planned.yaml"
    path.write_text(yaml.safe_dump({
        "source": {"type": "sample", "config": SOURCE},
        "streams": [{"name": "users", "sync_mode": "incremental",
                     "destination_sync_mode": "append_dedup"},
                    {"name": "orders"}],
        "metadata_store": f"sqlite:///{tmp_path / 'meta.db'}",
        "checkpoint": {"partitions_per_checkpoint": 2},
    }))
    return path


def test_plan_shows_partitions_bounds_and_estimates(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["plan", str(write(tmp_path)), "--json"])
    assert result.exit_code == 0, result.output
    streams = {s["name"]: s for s in json.loads(result.stdout)["streams"]}
    users = SampleSource(SOURCE).stream("users")
    assert streams["users"]["sync_mode"] == "incremental+append_dedup"
    assert streams["users"]["state_before"] is None
    assert streams["users"]["bounds"] == {"start": users.cursor_start(), "end": users.now()}
    assert streams["users"]["estimated_rows"] == 2500 + 10
    assert streams["orders"]["sync_mode"] == "full_refresh+overwrite"
    assert streams["orders"]["estimated_rows"] == 1200 + 10
    # 2500 initial rows in 1000-row windows, then generation 1's window: 4 partitions.
    assert streams["users"]["partitions"] == 4 and streams["users"]["checkpoints"] == 2
    assert sum(p["estimated_rows"] for p in streams["users"]["partition_list"]) == 2510


def test_plan_starts_from_the_stored_state_and_writes_nothing(tmp_path: Path) -> None:
    path = write(tmp_path)
    store = MetadataStore(f"sqlite:///{tmp_path / 'meta.db'}")
    users = SampleSource(SOURCE).stream("users")
    state = {"state_type": "date-range", "cursor_field": "updated_at",
             "slices": [{"start": users.cursor_start(), "end": "2024-01-01T00:16:40Z"}]}
    store.save_state("planned", "users", state, run_id=None, checkpoint_index=None)

    result = CliRunner().invoke(app, ["plan", str(path), "--json"])
    assert result.exit_code == 0, result.output
    planned = {s["name"]: s for s in json.loads(result.stdout)["streams"]}["users"]
    assert planned["state_before"] == state
    assert planned["bounds"]["start"] == "2024-01-01T00:16:40Z"
    cutoff = datetime(2024, 1, 1, 0, 16, 40, tzinfo=UTC)
    rows = SampleSource(SOURCE).expected_rows("users").column("updated_at").to_pylist()
    assert planned["estimated_rows"] == sum(1 for at in rows if at >= cutoff)

    assert store.list_runs("planned") == []
    # No index was handed out: the next allocation still starts at the first one.
    assert store.allocate_checkpoint_indices("planned", "users", 1) == FIRST_CHECKPOINT_INDEX
    assert store.allocate_checkpoint_indices("planned", "orders", 1) == FIRST_CHECKPOINT_INDEX


def test_plan_prints_a_table(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["plan", str(write(tmp_path))])
    assert result.exit_code == 0, result.output
    assert "nothing is read" in result.stdout and "users" in result.stdout


def test_plan_shows_each_stream_s_table_and_its_name(tmp_path: Path) -> None:
    path = write(tmp_path)
    document = yaml.safe_load(path.read_text())
    document["destination"] = {"type": "delta", "config": {
        "path": str(tmp_path / "lake"), "database": "raw", "table_prefix": "hw_"}}
    path.write_text(yaml.safe_dump(document))

    result = CliRunner().invoke(app, ["plan", str(path), "--json"])
    assert result.exit_code == 0, result.output
    users = {s["name"]: s for s in json.loads(result.stdout)["streams"]}["users"]
    assert users["table"] == str(tmp_path / "lake" / "users")
    assert users["table_name"] == "raw.hw_users"
    shown = CliRunner().invoke(app, ["plan", str(path)], env={"COLUMNS": "300"})
    assert shown.exit_code == 0, shown.output
    assert "raw.hw_users" in shown.stdout


def test_plan_shows_the_table_s_location_when_it_has_no_name(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["plan", str(write(tmp_path)), "--json"])
    assert result.exit_code == 0, result.output
    orders = {s["name"]: s for s in json.loads(result.stdout)["streams"]}["orders"]
    assert orders["table"].endswith("/orders") and orders["table_name"] is None
