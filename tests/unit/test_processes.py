"""One liveness check for every process Headwater takes over from (lock, pages, head start)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from headwater._processes import pid_alive


def test_this_process_is_alive_and_no_pid_is_not() -> None:
    assert pid_alive(os.getpid())
    assert not pid_alive(0) and not pid_alive(-1)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs procfs")
def test_an_unreaped_killed_process_counts_as_dead() -> None:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        assert pid_alive(proc.pid)
        proc.send_signal(signal.SIGKILL)
        deadline = time.monotonic() + 10
        while pid_alive(proc.pid):  # a zombie until wait() below
            assert time.monotonic() < deadline
            time.sleep(0.02)
    finally:
        proc.wait()
