"""The page's ``/metrics`` as an on-call engineer's Prometheus reads it: parsed with
prometheus_client's own parser, over a real SQLite store, through the in-process app.

A folder that holds one invalid file keeps its valid connections' samples; a store that
is missing or unreadable reads ``headwater_metadata_store_up 0`` and nothing stale; no
scrape creates a store file.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater.metadata_store import MetadataStore
from headwater.ui import create_app
from tests.unit.metadata_store.test_metadata_store_figures import Clock, run, store_clock
from tests.unit.observability.test_metrics import Samples, scrape, value
from tests.unit.ui._client import call

SHOP = ("name: shop\nsource: {type: sample, config: {users: 10}}\n"
        "streams: [{name: users, sync_mode: incremental}]\n"
        "schedule: '*/15 * * * *'\nmetadata_store: sqlite:///{db}\n")


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    return store_clock(monkeypatch)


@pytest.fixture
def folder(tmp_path: Path, clock: Clock, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``shop`` with one succeeded run (on 2026-11-20: long before its 15-minute schedule's
    last firing); the working directory is an empty folder of its own."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("HEADWATER_METADATA_STORE", raising=False)
    monkeypatch.delenv("HEADWATER_HOME", raising=False)
    db = tmp_path / "meta.db"
    store = MetadataStore(f"sqlite:///{db}")
    run(store, clock, "shop", seconds=3, checkpoints={"users": [{"records_written": 7}]})
    store.close()
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "shop.yaml").write_text(SHOP.replace("{db}", str(db)))
    return tmp_path / "c"


def metrics(folder: Path) -> Samples:
    status, text = call(create_app(folder), "GET", "/metrics")
    assert status == 200
    return scrape(text.encode())[1]


def test_a_valid_folder_reports_its_connections(folder: Path) -> None:
    samples = metrics(folder)
    assert value(samples, "headwater_metadata_store_up") == 1
    assert value(samples, "headwater_records_written_total", connection="shop",
                 stream="users") == 7
    assert value(samples, "headwater_runs", connection="shop", kind="sync",
                 status="succeeded") == 1
    assert value(samples, "headwater_connection_config_valid", connection="shop") == 1
    assert value(samples, "headwater_connection_late", connection="shop") == 1
    assert value(samples, "headwater_connection_late_seconds", connection="shop") > 0

    status, body = call(create_app(folder), "GET", "/api/connections")
    [shop] = body["connections"]
    assert status == 200 and shop["last_run"]["status"] == "succeeded"
    assert shop["late"]["since"].startswith("2026-11-20T14:15") and shop["late"]["age_s"] > 0
    assert shop["store_error"] is None and shop["stale"] == []


def test_an_invalid_file_opens_no_store_and_hides_nothing(folder: Path) -> None:
    """Defect 1 of issue 39: ``broken.yaml`` (no ``metadata_store``) counted as a connection
    on a store of its own, the default one under the working directory, created empty and
    read: every series lost its samples while the store read as up."""
    (folder / "broken.yaml").write_text("name: broken\nsource: {type: nope}\n")
    samples = metrics(folder)
    assert value(samples, "headwater_metadata_store_up") == 1
    assert value(samples, "headwater_records_written_total", connection="shop",
                 stream="users") == 7
    assert value(samples, "headwater_connection_config_valid", connection="broken") == 0
    assert value(samples, "headwater_connection_config_valid", connection="shop") == 1
    assert not (folder.parent / ".headwater").exists()  # no store created, none read

    status, body = call(create_app(folder), "GET", "/api/connections")
    assert status == 200
    broken = next(c for c in body["connections"] if c["name"] == "broken")
    assert broken["valid"] is False and broken["problems"] and broken["last_run"] is None


@pytest.mark.parametrize("damage", ["missing", "not a database"])
def test_a_store_that_does_not_answer_is_down_with_no_stale_samples(folder: Path,
                                                                    damage: str) -> None:
    db = folder.parent / "meta.db"
    app = create_app(folder)

    async def scrape_twice() -> tuple[str, str]:
        from aiohttp.test_utils import TestClient, TestServer

        async with TestClient(TestServer(app)) as client:
            first = await (await client.get("/metrics")).text()
            db.unlink()
            for extra in ("-wal", "-shm"):
                Path(f"{db}{extra}").unlink(missing_ok=True)
            if damage != "missing":
                db.write_bytes(b"not a database" * 1000)
            second = await (await client.get("/metrics")).text()
            return first, second

    import asyncio

    first, second = asyncio.run(scrape_twice())
    assert value(scrape(first.encode())[1], "headwater_metadata_store_up") == 1
    samples = scrape(second.encode())[1]
    assert value(samples, "headwater_metadata_store_up") == 0
    names = {name for name, _ in samples}
    assert not any(n.startswith(("headwater_runs", "headwater_records", "headwater_last"))
                   for n in names)
    assert "headwater_connection_late" not in names  # unknown, not "on time"
    assert value(samples, "headwater_connection_config_valid", connection="shop") == 1
    assert db.exists() == (damage != "missing")  # reading never created it
