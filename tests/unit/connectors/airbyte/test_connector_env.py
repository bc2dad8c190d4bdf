"""Connector venvs: packing for ``spark.archives`` and running the unpacked copy.

No cluster here: the test packs a venv laid out as :meth:`ConnectorEnv.ensure`
leaves it, unpacks the archive the way Spark does (into the working directory,
under the archive's alias) and checks the command then runs that copy.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from headwater.connectors.airbyte import ConnectorEnv


def _fake_venv(root: Path) -> ConnectorEnv:
    env = ConnectorEnv(package="airbyte-source-tiny", version="1.0.0", root=str(root))
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env.venv)], check=True)
    script = env.venv / "bin" / env.script
    script.write_text("import sys\nprint('tiny', sys.prefix)\n")
    (env.venv / ".headwater-ready").write_text("airbyte-source-tiny==1.0.0\n")
    return env


def test_pack_and_run_the_unpacked_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = _fake_venv(tmp_path / "envs")
    bin_dir = env.venv / "bin"
    assert env.command() == [str(bin_dir / "python"), str(bin_dir / "source-tiny")]
    archive = env.pack()
    assert archive.name == "airbyte-source-tiny-1.0.0.tar.gz" and env.pack() == archive

    executor = tmp_path / "executor"
    executor.mkdir()
    with tarfile.open(archive) as tar:
        tar.extractall(executor / env.alias, filter="tar")
    monkeypatch.chdir(executor)
    import pyspark  # noqa: F401  (an executor's Python worker runs inside PySpark)

    command = env.command()
    assert command[0] == str(executor / env.alias / "bin" / "python")
    done = subprocess.run(command, capture_output=True, text=True, check=True,
                          env={k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"})
    assert done.stdout.split() == ["tiny", str(executor / env.alias)]
