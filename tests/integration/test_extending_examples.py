"""The worked examples of docs/extending.md keep their kits' contracts: the example source
through the source kit, the example destination through the destination kit's
conformance run (in process, on the shared Spark session)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from headwater.destinations.testing import assert_conformant, run_conformance
from headwater.sdk.testing import assert_conformant as assert_source_conformant

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "extending"


def _example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Importable by name, so its classes pickle as a package's would (tasks get the streams).
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_example_source_keeps_the_sdk_contract() -> None:
    source = _example("countdown_source").CountdownSource
    report = assert_source_conformant(source, {"count": 25})
    assert report.checks


@pytest.mark.spark
def test_the_example_destination_passes_the_conformance_run(spark: Any, tmp_path: Path) -> None:
    destination = _example("parquet_log_destination").ParquetLogDestination
    report = assert_conformant(lambda folder: destination({"path": str(folder)}), spark,
                               tmp_path)
    assert {c.name for c in report.checks} >= {
        "mode:append", "mode:overwrite", "mode:append_dedup", "retried checkpoint lands once",
        "kill after commit, before state release", "restored metadata store: the markers decide"}



@pytest.mark.spark
def test_the_kit_catches_the_example_without_its_lookup(spark: Any, tmp_path: Path) -> None:
    base = _example("parquet_log_destination").ParquetLogDestination

    class Forgetful(base):  # type: ignore[misc,valid-type]
        def find_commit(self, *_: Any) -> None:
            return None

        def commit(self, spark: Any, plan: Any, checkpoint: Any, rows: Any, marker: Any) -> Any:
            marker = type(marker)(**{**marker.__dict__, "version": marker.version + 1000
                                     * marker.attempt})
            return super().commit(spark, plan, checkpoint, rows, marker)

    failed = {c.name for c in run_conformance(lambda f: Forgetful({"path": str(f)}), spark,
                                              tmp_path).failures}
    assert "kill after commit, before state release" in failed
