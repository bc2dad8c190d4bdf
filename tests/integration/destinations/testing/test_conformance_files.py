"""The destination kit's conformance run against the files destination, once per format,
in process on the shared Spark session, read back by ``headwater.destinations.files.read_table``
(pyarrow alone, following the manifests)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from headwater.destinations.files import FilesDestination
from headwater.destinations.testing import assert_conformant

pytestmark = pytest.mark.spark


@pytest.mark.parametrize(("fmt", "compression"),
                         [("parquet", "snappy"), ("jsonl", "gzip"), ("csv", "zstd")])
def test_files_keep_the_destination_contract(spark: Any, tmp_path: Path, fmt: str,
                                             compression: str) -> None:
    report = assert_conformant(
        lambda folder: FilesDestination({"path": str(folder), "format": fmt,
                                         "compression": compression}), spark, tmp_path)
    # append_dedup is not declared: the run checks that it is refused, not landed.
    assert "mode:append_dedup" in {c.name for c in report.checks}
