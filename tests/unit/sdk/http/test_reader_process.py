"""The early reads' own process, apart from the reads: what the forked child may touch.

Each test forks this test process (``ReaderProcess`` is what ``EarlyReads``
forks with) and gives the child a small piece of work; the lifecycle with real
reads is in ``test_early_reads.py``.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from headwater.config import SecretMaskingFilter, register_secrets
from headwater.config._secrets import _registry
from headwater.sdk.http._reader_process import ReaderProcess, fork_refused

SECRET = "s3cr3t-bearer-0f-the-driver"


class Kept(logging.Handler):
    """The driver's handler: keeps what it would write, masked as the CLI's is."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.pids: list[int | None] = []
        self.addFilter(SecretMaskingFilter())

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))
        self.pids.append(record.process)


@pytest.fixture
def kept() -> Iterator[Kept]:
    root = logging.getLogger()
    handler, level = Kept(), root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    register_secrets([SECRET])
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(level)
        _registry.clear()


def test_the_child_s_records_reach_the_driver_s_handlers_masked_and_nothing_its_stdout(
        kept: Kept, tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    def work(stop: threading.Event) -> int:
        logging.getLogger("headwater.test").warning("calling with %s", SECRET)
        print("printed in the child", flush=True)
        return 7

    ended: list[Any] = []
    process = ReaderProcess(work, tmp_path, ended.append)
    child = process.start()
    assert process.join(30)
    assert ended == [7]  # what the work returned, once the child was reaped
    said = [line for line, pid in zip(kept.lines, kept.pids, strict=True) if pid == child]
    assert said == ["calling with **********"]
    out, err = capfd.readouterr()
    assert "printed in the child" not in out  # the driver's stdout is its --json
    assert SECRET not in out + err


def test_a_child_that_fails_ends_reaped_and_says_nothing(tmp_path: Path) -> None:
    def work(stop: threading.Event) -> int:
        raise RuntimeError("boom")

    ended: list[Any] = []
    process = ReaderProcess(work, tmp_path, ended.append)
    child = process.start()
    assert process.join(30)
    assert ended == [None]
    with pytest.raises(ChildProcessError):
        os.waitpid(child, os.WNOHANG)


def test_no_fork_beside_other_threads() -> None:
    other = threading.Event()
    thread = threading.Thread(target=other.wait, name="busy-elsewhere", daemon=True)
    thread.start()
    try:
        refused = fork_refused()
        assert refused is not None and "busy-elsewhere" in refused
    finally:
        other.set()
        thread.join()
