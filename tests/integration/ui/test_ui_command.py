"""``headwater ui DIR`` as a user runs it: it serves on loopback, refuses to listen beyond
it without a token, and SIGTERM ends it cleanly (exit 0)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests._processes import stop
from tests.integration._connections import connection_file

REPO = Path(__file__).resolve().parents[3]


def _start(folder: Path, *args: str, command: str = "ui") -> subprocess.Popen[str]:
    environment = {k: v for k, v in os.environ.items() if k != "HEADWATER_UI_TOKEN"}
    environment["PYTHONPATH"] = str(REPO)
    return subprocess.Popen([sys.executable, "-m", "headwater", command, str(folder), *args],
                            cwd=folder, env=environment, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


@pytest.mark.parametrize(("command", "ending"), [
    ("ui", "stopped: every sync the page started has ended"),
    ("serve", "stopped: every run in progress has ended"),  # serve DIR --ui
])
def test_the_page_serves_then_stops_on_sigterm(tmp_path: Path, command: str,
                                               ending: str) -> None:
    connection_file(tmp_path, name="shop", source={"users": 10}, streams=[])
    process = _start(tmp_path, "--port", "0", *(["--ui"] if command == "serve" else []),
                     command=command)
    try:
        assert process.stderr is not None
        first = process.stderr.readline()
        found = re.search(r"web page on (http://127\.0\.0\.1:\d+)/", first)
        assert found, first + process.stderr.read()
        listing = httpx.get(f"{found.group(1)}/api/connections", timeout=60).json()
        assert [c["name"] for c in listing["connections"]] == ["shop"]
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 0, stderr
        assert ending in stderr
    finally:
        if process.poll() is None:
            stop(process)


def test_ui_refuses_to_listen_beyond_loopback_without_a_token(tmp_path: Path) -> None:
    process = _start(tmp_path, "--host", "0.0.0.0", "--port", "0")
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 2
    assert "needs a token" in stderr and "HEADWATER_UI_TOKEN" in stderr
