"""What a Spark Python worker imports to run a task: the task's module, not the driver's engine."""

from __future__ import annotations

import subprocess
import sys

DRIVER_ONLY = ("headwater.engine._sync", "headwater.metadata_store", "sqlalchemy")


def test_importing_the_task_module_leaves_the_driver_side_alone() -> None:
    code = ("import sys, headwater.engine._task\n"
            f"print([m for m in {DRIVER_ONLY!r} if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"


def test_the_engine_names_still_import_from_the_package() -> None:
    from headwater.engine import SparkSettings, SyncEngine, SyncResult

    assert SyncEngine.__module__ == "headwater.engine._sync"
    assert SyncResult.__name__ == "SyncResult" and SparkSettings.__name__ == "SparkSettings"
