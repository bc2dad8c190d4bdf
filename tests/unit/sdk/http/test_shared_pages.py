"""Pages of one call shared by the tasks of a run: read once, never half (no Spark)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from headwater.sdk.http._shared_pages import SharedPages

PAGES = [[{"id": 1}, {"id": 2}], [{"id": 3}]]


class Api:
    """Counts the calls; each call's pages arrive ``delay_s`` apart."""

    def __init__(self, delay_s: float = 0.0, fail_after: int | None = None) -> None:
        self.calls = 0
        self.delay_s = delay_s
        self.fail_after = fail_after

    async def fetch(self) -> AsyncIterator[list[dict[str, Any]]]:
        self.calls += 1
        for number, page in enumerate(PAGES):
            if self.fail_after is not None and number >= self.fail_after:
                raise RuntimeError("the API broke")
            await asyncio.sleep(self.delay_s)
            yield [dict(record) for record in page]


async def pages(shared: SharedPages, api: Api, key: str = "k") -> list[list[dict[str, Any]]]:
    return [page async for page in shared.read(key, api.fetch)]


def test_two_readers_at_once_make_one_call_and_get_the_same_pages(tmp_path: Path) -> None:
    shared = SharedPages(str(tmp_path), stale_after_s=60)
    api = Api(delay_s=0.05)

    async def both() -> list[Any]:
        return list(await asyncio.gather(pages(shared, api), pages(shared, api)))

    first, second = asyncio.run(both())
    assert first == second == PAGES
    assert api.calls == 1
    assert [p.name for p in tmp_path.iterdir()] == [f"{'k'}.pages"]
    assert asyncio.run(pages(shared, api)) == PAGES and api.calls == 1  # later: from the file


def test_a_failed_read_withdraws_its_claim_and_leaves_no_pages(tmp_path: Path) -> None:
    shared = SharedPages(str(tmp_path), stale_after_s=60)
    with pytest.raises(RuntimeError, match="broke"):
        asyncio.run(pages(shared, Api(fail_after=1)))
    assert list(tmp_path.iterdir()) == []  # nothing half: the next reader calls the API
    api = Api()
    assert asyncio.run(pages(shared, api)) == PAGES and api.calls == 1


@pytest.mark.parametrize("held_by", ["k.claim", "driver.pid"])
def test_a_process_that_died_holds_nothing_up(tmp_path: Path, held_by: str) -> None:
    # A claim of a dead reader is broken; a dead driver's calls are the task's to make.
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    (tmp_path / held_by).write_text(dead.stdout.strip())
    api = Api()
    assert asyncio.run(pages(SharedPages(str(tmp_path), stale_after_s=60), api)) == PAGES
    assert api.calls == 1


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs procfs")
def test_a_claim_of_a_killed_reader_not_yet_reaped_is_broken_at_once(tmp_path: Path) -> None:
    # A SIGKILLed task worker stays a zombie until its parent reaps it, and a zombie
    # still answers kill(pid, 0): its claim must not wait out the staleness limit.
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) as reader:
        (tmp_path / "k.claim").write_text(str(reader.pid))
        reader.send_signal(signal.SIGKILL)
        while Path(f"/proc/{reader.pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z":
            time.sleep(0.01)
        api = Api()
        shared = SharedPages(str(tmp_path), stale_after_s=3600)
        assert asyncio.run(asyncio.wait_for(pages(shared, api), timeout=10)) == PAGES
        assert api.calls == 1


def test_a_claim_untouched_too_long_is_broken(tmp_path: Path) -> None:
    claim = tmp_path / "k.claim"
    claim.write_text(str(os.getpid()))  # alive, but no page for longer than allowed
    os.utime(claim, (0, 0))
    api = Api()
    assert asyncio.run(pages(SharedPages(str(tmp_path), stale_after_s=60), api)) == PAGES
    assert api.calls == 1


def test_the_kept_pages_are_the_ones_handed_on_not_what_a_reader_made_of_them(
        tmp_path: Path) -> None:
    shared = SharedPages(str(tmp_path), stale_after_s=60)

    async def mutate() -> None:
        async for page in shared.read("k", Api().fetch):
            for record in page:
                record["id"] = -1

    asyncio.run(mutate())
    assert asyncio.run(pages(shared, Api())) == PAGES


def test_a_task_leaves_calls_to_a_live_driver_until_it_is_done(tmp_path: Path) -> None:
    with subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]) as driver:
        try:
            (tmp_path / "driver.pid").write_text(str(driver.pid))
            shared = SharedPages(str(tmp_path), stale_after_s=60)
            api = Api()

            async def waits() -> None:
                await asyncio.wait_for(pages(shared, api), timeout=0.3)

            with pytest.raises(TimeoutError):
                asyncio.run(waits())  # nobody's call, but the driver will make it
            assert api.calls == 0
            (tmp_path / "driver.done").touch()  # the driver made every call it will make
            assert asyncio.run(pages(shared, api)) == PAGES and api.calls == 1
        finally:
            driver.kill()


def test_a_folder_that_is_gone_shares_nothing(tmp_path: Path) -> None:
    api = Api()
    assert asyncio.run(pages(SharedPages(str(tmp_path / "gone"), stale_after_s=60), api)) == PAGES
    assert not (tmp_path / "gone").exists() and api.calls == 1


def test_without_keep_a_call_nobody_has_is_read_and_not_kept(tmp_path: Path) -> None:
    shared = SharedPages(str(tmp_path), stale_after_s=60)
    api = Api()

    async def unkept() -> list[Any]:
        return [page async for page in shared.read("k", api.fetch, keep=False)]

    assert asyncio.run(unkept()) == PAGES and list(tmp_path.iterdir()) == []
    asyncio.run(pages(shared, api))  # kept by a reader that keeps
    assert asyncio.run(unkept()) == PAGES and api.calls == 2  # the third read: the file
