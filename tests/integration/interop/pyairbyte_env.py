"""PyAirbyte (the ``airbyte`` package) in its own venv, made once per machine and reused.

PyAirbyte pins libraries (pandas, SQLAlchemy, DuckDB...) that clash with
Headwater's, so it never enters the project's venv: the fixture installs it
into ``~/.cache/headwater/test-envs/pyairbyte-<version>`` (or under
``$HEADWATER_TEST_ENVS``) and tests drive it as a separate process.  It runs
offline (``AIRBYTE_OFFLINE_MODE``: no registry, no telemetry).
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
from pathlib import Path

PYAIRBYTE_VERSION = "0.71.3"
READY = ".headwater-ready"


def pyairbyte_python() -> Path:
    """The interpreter of the PyAirbyte venv, creating the venv if this machine has none."""
    root = Path(os.environ.get("HEADWATER_TEST_ENVS")
                or Path.home() / ".cache" / "headwater" / "test-envs")
    venv = root / f"pyairbyte-{PYAIRBYTE_VERSION}"
    root.mkdir(parents=True, exist_ok=True)
    with open(root / f"{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (venv / READY).exists():
            subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
            subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet",
                            "--disable-pip-version-check", f"airbyte=={PYAIRBYTE_VERSION}"],
                           check=True)
            (venv / READY).write_text(PYAIRBYTE_VERSION + "\n")
    return venv / "bin" / "python"


def pyairbyte_environment() -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**clean, "AIRBYTE_OFFLINE_MODE": "1", "DO_NOT_TRACK": "1"}
