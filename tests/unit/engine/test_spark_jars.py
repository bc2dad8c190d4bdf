"""Delta's jars: resolved by Ivy once, then named directly (``headwater.engine._spark``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater.destinations.delta import DELTA_PACKAGE
from headwater.engine._jars import missing_artifacts
from headwater.engine._s3a import PACKAGES as S3A_PACKAGES
from headwater.engine._spark import (
    CACHE_ENV,
    LOCAL_JARS_ENV,
    SparkSettings,
    _base_conf,
    resolved_jars_file,
)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(LOCAL_JARS_ENV, raising=False)
    return tmp_path


def _jars(folder: Path, *names: str) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / name for name in names]
    for path in paths:
        path.write_bytes(b"PK")
    return paths


def test_without_a_list_ivy_resolves_the_package(cache: Path) -> None:
    conf = _base_conf(SparkSettings(master="local[*]"))
    if "spark.jars.packages" not in conf:
        pytest.skip("this checkout has Maven-fetched jars (.headwater/jars)")
    assert conf["spark.jars.packages"].split(",") == [DELTA_PACKAGE, *S3A_PACKAGES]
    assert "spark.jars" not in conf


def test_every_session_can_reach_s3a_without_the_sdk_bundle(cache: Path) -> None:
    """hadoop-aws declares the 686 MB SDK bundle; Ivy is told to leave it (and what
    Spark ships) out, and the Maven fallback names every jar Ivy resolves instead."""
    needs = SparkSettings(master="local[*]").needs()
    assert "org.apache.hadoop:hadoop-aws:3.5.0" in needs.packages
    assert needs.jar_prefix == "delta-spark"
    excludes = _base_conf(SparkSettings(master="local[*]"))["spark.jars.excludes"].split(",")
    assert {"software.amazon.awssdk:bundle", "io.netty:*"} <= set(excludes)
    assert not any(":bundle:" in artifact for artifact in needs.maven_artifacts)
    assert set(S3A_PACKAGES) <= set(needs.maven_artifacts)


def test_a_maven_folder_from_before_s3a_is_missing_its_jars(tmp_path: Path) -> None:
    _jars(tmp_path, "delta-spark_4.2_2.13-4.4.0.jar", "hadoop-aws-3.5.0.jar")
    assert missing_artifacts(("io.delta:delta-spark_4.2_2.13:4.4.0",
                              "org.apache.hadoop:hadoop-aws:3.5.0",
                              "software.amazon.awssdk:s3:2.35.4"), tmp_path) == (
        "software.amazon.awssdk:s3:2.35.4",)


def test_the_jars_ivy_resolved_are_named_directly(cache: Path) -> None:
    jars = _jars(cache / "ivy", "io.delta_delta-spark_4.2_2.13-4.4.0.jar", "other.jar")
    resolved_jars_file().parent.mkdir(parents=True)
    resolved_jars_file().write_text("\n".join(str(j) for j in jars) + "\n")
    conf = _base_conf(SparkSettings(master="local[*]"))
    if "spark.jars.packages" not in conf and "ivy" not in conf.get("spark.jars", ""):
        pytest.skip("this checkout has Maven-fetched jars (.headwater/jars)")
    assert conf["spark.jars"] == ",".join(str(j) for j in jars)
    assert "spark.jars.packages" not in conf and "spark.jars.ivySettings" not in conf


def test_a_list_naming_a_missing_jar_is_not_used(cache: Path) -> None:
    jars = _jars(cache / "ivy", "io.delta_delta-spark_4.2_2.13-4.4.0.jar")
    resolved_jars_file().parent.mkdir(parents=True)
    resolved_jars_file().write_text(f"{jars[0]}\n{cache / 'ivy' / 'gone.jar'}\n")
    conf = _base_conf(SparkSettings(master="local[*]"))
    assert "gone.jar" not in conf.get("spark.jars", "")


def test_settings_naming_their_own_jars_go_through_ivy(cache: Path) -> None:
    jars = _jars(cache / "ivy", "io.delta_delta-spark_4.2_2.13-4.4.0.jar")
    resolved_jars_file().parent.mkdir(parents=True)
    resolved_jars_file().write_text(f"{jars[0]}\n")
    conf = _base_conf(SparkSettings(master="local[*]",
                                    conf={"spark.jars.packages": "org.postgresql:postgresql:1"}))
    assert str(jars[0]) not in conf.get("spark.jars", "")
