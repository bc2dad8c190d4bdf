"""A run's log lines as a file to download from its page: text, named, bounded, masked."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from headwater.config import register_secrets
from headwater.engine._run_logs import KEEP_FIRST, KEEP_LAST
from headwater.metadata_store import MetadataStore, RunLogLine
from headwater.ui import create_app
from tests.unit.ui._client import call

SECRET = "log-file-secret-0123456789"


def test_the_log_file_keeps_head_and_tail_says_what_is_left_out_and_masks(
        tmp_path: Path) -> None:
    folder = tmp_path / "c"
    folder.mkdir()
    url = f"sqlite:///{tmp_path / 'meta.db'}"
    (folder / "shop.yaml").write_text("name: shop\nsource: {type: sample}\n"
                                      f"metadata_store: {url}\n")
    store = MetadataStore(url)
    run_id = store.create_run("shop", plan={"connection": "shop", "streams": []},
                              state_before={}, config_redacted={})
    at = datetime(2026, 11, 29, 1, 0, tzinfo=UTC)
    total = KEEP_FIRST + KEEP_LAST + 2
    lines = [RunLogLine(seq=n, at=at, level="INFO", logger="headwater.engine",
                        message=f"line {n}") for n in range(1, total + 1)]
    lines[-1] = RunLogLine(seq=total, at=at, level="ERROR", logger="headwater.engine",
                           message=f"failed with token {SECRET}\nTraceback: boom")
    store.append_run_logs(run_id, lines, keep_first=KEEP_FIRST, keep_last=KEEP_LAST)
    register_secrets([SECRET])

    async def get() -> tuple[int, dict[str, str], str]:
        from aiohttp.test_utils import TestClient, TestServer

        async with TestClient(TestServer(create_app(folder))) as client:
            response = await client.get(f"/api/runs/{run_id}/logs.txt")
            return response.status, dict(response.headers), await response.text()

    import asyncio

    status, headers, text = asyncio.run(get())
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    assert headers["Content-Disposition"] == \
        f'attachment; filename="headwater-run-{run_id}.log"'
    body = text.splitlines()
    assert f"first {KEEP_FIRST} and last {KEEP_LAST}" in body[1] and "2 left out" in body[1]
    assert body[2].endswith("INFO    headwater.engine: line 1")
    assert f"line {KEEP_FIRST}" in body[KEEP_FIRST + 1]
    assert body[KEEP_FIRST + 2] == "[... 2 line(s) left out here ...]"
    assert f"line {KEEP_FIRST + 3}" in body[KEEP_FIRST + 3]
    assert body[-2].endswith("ERROR   headwater.engine: failed with token **********")
    assert body[-1] == "    Traceback: boom" and SECRET not in text
    assert call(create_app(folder), "GET", "/api/runs/nope/logs.txt")[0] == 404
