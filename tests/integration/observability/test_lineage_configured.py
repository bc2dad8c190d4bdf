"""Where events go: a ``lineage: {file: ...}`` block, the client's environment, or nowhere.

No Spark: the run is a previewed plan, started and ended by hand as the engine
does; the receiver is the real test HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from headwater.config import load_connection
from headwater.engine import StreamStats, SyncEngine
from headwater.metadata_store import MetadataStore
from headwater.observability.lineage import RunLineage
from headwater.observability.lineage._events import run_uuid
from tests.lineage_receiver import LineageReceiver
from tests.openlineage_schema import validate_event


@pytest.fixture
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No OpenLineage variables from outside; none the client sets itself left behind
    (it aliases ``OPENLINEAGE_URL`` into ``OPENLINEAGE__TRANSPORT__...`` variables)."""
    for name in list(os.environ):
        if name.startswith("OPENLINEAGE"):
            monkeypatch.delenv(name)
    yield
    for name in list(os.environ):
        if name.startswith("OPENLINEAGE__"):
            del os.environ[name]


def engine(tmp_path: Path, **extra: Any) -> SyncEngine:
    document = {"name": "shop", "source": {"type": "sample", "config": {"users": 10}},
                "destination": {"type": "delta", "config": {"path": str(tmp_path / "lake")}},
                "streams": [{"name": "users"}],
                "metadata_store": f"sqlite:///{tmp_path / 'meta.db'}", **extra}
    path = tmp_path / "shop.yaml"
    path.write_text(yaml.safe_dump(document))
    connection = load_connection(path)
    return SyncEngine(connection, MetadataStore(connection.metadata_store or ""))


def run_once(engine: SyncEngine, run_id: str) -> None:
    """START and COMPLETE of a run of the engine's plan, as ``SyncEngine._one_run`` sends them."""
    plan = engine.preview(parallelism=1)
    events = engine.lineage.started(run_id, plan, attempt=1, resumed=False)
    events.ended("succeeded", streams=[StreamStats(name="users", mode="full_refresh",
                                                   records_written=10, bytes=512)])


def test_a_file_gets_one_json_event_per_line(tmp_path: Path, clean_environment: None) -> None:
    target = tmp_path / "lineage.jsonl"
    shop = engine(tmp_path, lineage={"file": str(target), "namespace": "files"})
    run_once(shop, "run-1")
    run_once(shop, "run-2")
    events = [json.loads(line) for line in target.read_text().splitlines()]
    for event in events:
        validate_event(event)
    assert [(e["eventType"], e["run"]["runId"]) for e in events] == [
        ("START", run_uuid("run-1")), ("COMPLETE", run_uuid("run-1")),
        ("START", run_uuid("run-2")), ("COMPLETE", run_uuid("run-2"))]
    assert {e["job"]["namespace"] for e in events} == {"files"}
    assert events[1]["outputs"][0]["outputFacets"]["outputStatistics"]["rowCount"] == 10


def test_the_clients_environment_turns_lineage_on(tmp_path: Path, clean_environment: None,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    with LineageReceiver() as receiver:
        monkeypatch.setenv("OPENLINEAGE_URL", receiver.url)
        monkeypatch.setenv("OPENLINEAGE_NAMESPACE", "from-env")
        run_once(engine(tmp_path), "run-env")
        events = receiver.events_of(run_uuid("run-env"))
    assert [e["eventType"] for e in events] == ["START", "COMPLETE"]
    for event in events:
        validate_event(event)
    assert {e["job"]["namespace"] for e in events} == {"from-env"}


def test_without_a_block_or_the_environment_lineage_is_off(tmp_path: Path,
                                                           clean_environment: None) -> None:
    shop = engine(tmp_path)
    assert not shop.lineage.enabled
    run_once(shop, "run-off")  # sends nothing, fails nothing


def test_a_block_without_the_client_installed_is_a_config_error(
        tmp_path: Path, clean_environment: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from headwater.errors import ConfigError

    shop = engine(tmp_path, lineage={"file": str(tmp_path / "x.jsonl")})
    monkeypatch.setitem(__import__("sys").modules, "openlineage.client", None)
    with pytest.raises(ConfigError, match=r"headwater\[lineage\]") as info:
        RunLineage.for_connection(shop.connection, shop.source, shop.destination)
    assert info.value.context.get("field") == "lineage"
