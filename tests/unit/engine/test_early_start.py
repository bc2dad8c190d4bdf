"""The source built and offered the run's reads before the engine (``headwater sync``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from headwater.config import ConnectionConfig, SparkConfig
from headwater.connectors import get_source_class
from headwater.engine import SyncEngine, SyncOptions
from headwater.engine._early_start import start_early
from headwater.errors import ConfigError
from headwater.metadata_store import MetadataStore
from headwater.operations._settings import open_store, spark_settings

EARLY_READS_NICE = SparkConfig().early_reads_jvm_nice


def connection(tmp_path: Path, **extra: Any) -> ConnectionConfig:
    return ConnectionConfig.model_validate({
        "name": "early", "source": {"type": "sample", "config": {"users": 10}},
        "destination": {"type": "delta", "config": {"path": str(tmp_path / "lake")}},
        "streams": [{"name": "users"}], **extra})


@pytest.fixture
def hints(monkeypatch: pytest.MonkeyPatch) -> list[tuple[object, object]]:
    """What the sample source is told; it says it started reads when given some."""
    told: list[tuple[object, object]] = []

    def prepare(self: object, reads: object = None, context: object = None) -> bool:
        told.append((reads, context))
        return reads is not None

    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    monkeypatch.setattr(get_source_class("sample"), "prepare", prepare)
    return told


def store(tmp_path: Path) -> MetadataStore:
    return open_store(f"sqlite:///{tmp_path / 'store.db'}")


def test_the_engine_takes_the_source_and_the_plan_s_context_the_reads_began_with(
        tmp_path: Path, hints: list[tuple[object, object]]) -> None:
    config = connection(tmp_path)
    settings = spark_settings(config)
    early = start_early(config, store(tmp_path), settings)
    # The hint first (its streams will be asked for), then the reads.
    assert [reads for reads, _ in hints] == [None, {"users": None}]
    assert early.context is not None and early.context.shared_dir
    assert Path(early.context.shared_dir).is_dir()
    assert early.jvm_nice == EARLY_READS_NICE
    sync = SyncEngine(config, store(tmp_path), SyncOptions(spark=settings), early=early)
    assert sync.source is early.source
    assert len(hints) == 2  # not told again
    assert sync._early is early.context
    assert sync.options.spark.jvm_nice == EARLY_READS_NICE
    sync._end_early_reads(None)  # no run: the folder goes
    assert not Path(early.context.shared_dir).exists()


def test_a_cluster_master_is_offered_no_reads(
        tmp_path: Path, hints: list[tuple[object, object]]) -> None:
    config = connection(tmp_path, spark={"master": "spark://spark-master:7077"})
    early = start_early(config, store(tmp_path), spark_settings(config))
    assert [reads for reads, _ in hints] == [None]
    assert early.context is None and early.jvm_nice is None


def test_an_engine_that_cannot_be_built_ends_the_reads_begun_for_it(
        tmp_path: Path, hints: list[tuple[object, object]]) -> None:
    config = connection(tmp_path)
    config = config.model_copy(update={"destination": config.destination.model_copy(
        update={"config": {"path": str(tmp_path / "lake"), "no_such_setting": 1}})})
    settings = spark_settings(config)
    early = start_early(config, store(tmp_path), settings)
    assert early.context is not None and early.context.shared_dir
    with pytest.raises(ConfigError):
        SyncEngine(config, store(tmp_path), SyncOptions(spark=settings), early=early)
    # The folder is gone: a source's early reads stop when it is.
    assert not Path(early.context.shared_dir).exists()
