"""The destination kit's conformance run against Delta, in process on the shared Spark
session (the local folder, the default writer: task-written files added by delta-rs)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from headwater.destinations.delta import DeltaDestination
from headwater.destinations.testing import assert_conformant

pytestmark = pytest.mark.spark


def test_delta_keeps_the_destination_contract(spark: Any, tmp_path: Path) -> None:
    assert_conformant(lambda folder: DeltaDestination({"path": str(folder)}), spark, tmp_path)
