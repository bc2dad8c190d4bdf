"""Stopping a server a test started: politely first, then for sure."""

from __future__ import annotations

import subprocess


def stop(process: subprocess.Popen[bytes], timeout: float = 10) -> None:
    """SIGTERM, then SIGKILL if it is still running after ``timeout`` seconds; reaped."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
