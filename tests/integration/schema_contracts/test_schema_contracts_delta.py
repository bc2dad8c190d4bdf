"""Every schema contract setting against every kind of change on the Delta destination
(the scenario: ``_scenario.py``), in the test process on the shared Spark session; the
tables read back by delta-rs (no Spark job per look)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.integration.schema_contracts._scenario import Lake, run_matrix

pytestmark = pytest.mark.spark


def test_each_setting_against_each_kind_of_change_on_delta(spark: Any, tmp_path: Path) -> None:
    from deltalake import DeltaTable
    from deltalake.exceptions import TableNotFoundError

    root = tmp_path / "lake"

    def rows(stream: str) -> list[dict[str, Any]] | None:
        try:
            table = DeltaTable(str(root / stream))
        except TableNotFoundError:
            return None
        return table.to_pyarrow_table().to_pylist()

    def commits(stream: str) -> int:
        return DeltaTable(str(root / stream)).version()

    run_matrix(tmp_path, Lake(rows, commits, {"type": "delta", "config": {"path": str(root)}}))
