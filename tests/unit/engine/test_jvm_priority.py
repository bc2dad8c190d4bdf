"""Spark's JVM yields the CPU to reads that started before it, and only then."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from headwater.config import ConnectionConfig, SparkConfig
from headwater.engine import SyncEngine, SyncOptions
from headwater.operations._settings import open_store, spark_settings

EARLY_READS_NICE = SparkConfig().early_reads_jvm_nice


def engine(tmp_path: Path, spark: dict[str, Any] | None = None) -> SyncEngine:
    config = ConnectionConfig.model_validate({
        "name": "early", "source": {"type": "sample", "config": {"users": 10}},
        "destination": {"type": "delta", "config": {"path": str(tmp_path / "lake")}},
        "streams": [{"name": "users"}], **({"spark": spark} if spark else {})})
    store = open_store(f"sqlite:///{tmp_path / 'store.db'}")
    return SyncEngine(config, store, SyncOptions(spark=spark_settings(config)))


@pytest.mark.parametrize(("started", "spark", "nice"), [
    (True, None, EARLY_READS_NICE),
    (False, None, 0),
    (None, None, 0),  # a source that ignores the hint
    (True, {"early_reads_jvm_nice": 0}, 0),
    (True, {"early_reads_jvm_nice": 4}, 4),
])
def test_the_jvm_starts_lower_only_when_reads_started_before_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, started: bool | None,
        spark: dict[str, Any] | None, nice: int) -> None:
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    sync = engine(tmp_path, spark)
    hints: list[object] = []

    def prepare(reads: object = None, context: object = None) -> bool | None:
        hints.append(reads)
        return started

    monkeypatch.setattr(sync.source, "prepare", prepare)
    sync.start_reads_early()
    assert hints == [{"users": None}]
    assert sync.options.spark.jvm_nice == nice


def test_a_cluster_master_gets_no_early_reads_and_no_lower_priority(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sync = engine(tmp_path, {"master": "spark://spark-master:7077"})
    monkeypatch.setattr(sync.source, "prepare", lambda *args: True)
    sync.start_reads_early()
    assert sync.options.spark.jvm_nice == 0
