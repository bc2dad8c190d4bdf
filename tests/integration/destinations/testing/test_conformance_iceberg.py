"""The destination kit's conformance run against Iceberg (the default path-based catalog),
in process on the shared Spark session, read back through PyIceberg."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from headwater.destinations import Destination
from headwater.destinations.iceberg import IcebergDestination
from headwater.destinations.testing import assert_conformant
from tests.integration.destinations.iceberg._catalogs import iceberg_config, load_table

pytestmark = pytest.mark.spark


def _read_iceberg(destination: Destination, stream: str) -> pa.Table:
    """Through a PyIceberg client of the test's own, not the writer's."""
    return load_table(destination.config, stream).scan().to_arrow()


def test_iceberg_keeps_the_destination_contract(spark: Any, tmp_path: Path) -> None:
    assert_conformant(lambda folder: IcebergDestination(iceberg_config(folder)), spark,
                      tmp_path, read_rows=_read_iceberg)
