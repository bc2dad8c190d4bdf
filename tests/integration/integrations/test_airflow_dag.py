"""The Airflow operator and sensor run a real sync in ``airflow dags test``.

Airflow is too large (and pins too much) to share ``.venv``, so
``scripts/airflow-check`` installs ``headwater[airflow]`` into a virtual
environment of its own, runs ``examples/airflow/headwater_sync_dag.py`` (the
operator syncs, the sensor waits for that run) and checks the run in the
metadata store.  This test runs that script as CI does.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.airflow

REPO = Path(__file__).resolve().parents[3]


def test_airflow_dags_test_runs_a_sync(tmp_path: Path) -> None:
    done = subprocess.run(["bash", str(REPO / "scripts" / "airflow-check")], cwd=REPO,
                          env=dict(os.environ), capture_output=True, text=True, timeout=1800,
                          check=False)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "succeeded, 700 records written" in done.stdout
