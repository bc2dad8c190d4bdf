"""A second sync of an installed connector asks it neither ``spec`` nor ``discover`` again.

The connector is ``airbyte-source-faker`` from its managed venv, seen through a
venv folder of the test's own whose ``lib`` is the real one and whose console
script logs each start before running the real one: the connector that runs is
the real one, and the test counts its starts.
"""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from headwater.connectors.airbyte import ConnectorEnv, envs_root
from tests.integration.connectors.airbyte.test_airbyte_source_sync import (
    FAKER,
    ids,
    sync,
    write_connection,
)

pytestmark = pytest.mark.spark


def counted_copy(installed: ConnectorEnv, root: Path, log: Path) -> None:
    """``installed``'s venv under ``root``, its console script logging each start to ``log``."""
    venv = root / installed.venv.name
    (venv / "bin").mkdir(parents=True)
    shutil.copy(installed.venv / "pyvenv.cfg", venv / "pyvenv.cfg")
    (venv / "lib").symlink_to(installed.venv / "lib")
    (venv / "bin" / "python").symlink_to(installed.venv / "bin" / "python")
    script = (installed.venv / "bin" / installed.script).read_text().split("\n", 1)[1]
    (venv / "bin" / installed.script).write_text(
        f"import sys\nwith open({str(log)!r}, 'a') as log:\n"
        "    log.write(sys.argv[1] + '\\n')\n" + script)
    (venv / ".headwater-ready").write_text(installed.label + "\n")


def test_a_second_sync_runs_only_the_read_and_lands_the_same_rows(
        spark: Any, tmp_path: Path) -> None:
    installed = ConnectorEnv(package=FAKER["package"], version=FAKER["version"],
                             root=str(envs_root()))
    installed.ensure()
    log = tmp_path / "starts.log"
    counted_copy(installed, tmp_path / "envs", log)
    source = {**FAKER, "envs_dir": str(tmp_path / "envs"),
              "config": {"count": 300, "seed": 7, "records_per_slice": 100, "parallelism": 1,
                         "always_updated": False}}
    streams = [{"name": "users", "sync_mode": "full_refresh",
                "destination_sync_mode": "overwrite"}]
    path = write_connection(tmp_path, source, streams)

    first, _ = sync(path)
    assert first.status == "succeeded", [s.error for s in first.streams]
    landed = ids(spark, tmp_path, "users")
    assert sum(landed.values()) == 300 and len(landed) == 300
    assert Counter(log.read_text().splitlines()) == Counter({"spec": 1, "discover": 1,
                                                             "read": 1})

    log.write_text("")
    second, _ = sync(path)
    assert second.status == "succeeded", [s.error for s in second.streams]
    assert log.read_text().splitlines() == ["read"]  # the kept spec and catalog served
    assert ids(spark, tmp_path, "users") == landed
    assert second.streams[0].records_written == first.streams[0].records_written == 300
