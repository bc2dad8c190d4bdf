"""Headwater installed from a wheel, outside the clone, runs the quickstart.

``scripts/wheel-check`` builds the wheel, installs it with its declared
dependencies into a virtual environment of its own under ``/tmp``, and runs
``python -m headwater.engine._jars`` and ``headwater sync quickstart.yaml`` from
a folder outside the clone: the package must find its jars and its own modules
(on the Python workers too) without the source tree.  This test runs that
script as CI does.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.wheel

REPO = Path(__file__).resolve().parents[2]


def test_the_wheel_runs_the_quickstart_outside_the_clone() -> None:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run(["bash", str(REPO / "scripts" / "wheel-check")], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=1800, check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "headwater imported from /" in done.stdout
    assert "quickstart from the wheel: succeeded, {'users': 20000, 'orders': 100000}" \
        in done.stdout
