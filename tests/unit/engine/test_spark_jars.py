"""Delta's jars: resolved by Ivy once, then named directly (``headwater.engine._spark``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from headwater.destinations.delta import DELTA_PACKAGE
from headwater.engine._class_archive import archive_path, spark_jars_dir
from headwater.engine._jars import missing_artifacts
from headwater.engine._s3a import PACKAGES as S3A_PACKAGES
from headwater.engine._spark import (
    CACHE_ENV,
    DRIVER_CLASS_PATH,
    LOCAL_JARS_ENV,
    SparkSettings,
    _base_conf,
    _merge_class_path,
    local_driver_class_path,
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
    conf = _base_conf(SparkSettings(master="spark://10.0.0.1:7077"))
    if "spark.jars.packages" not in conf and "ivy" not in conf.get("spark.jars", ""):
        pytest.skip("this checkout has Maven-fetched jars (.headwater/jars)")
    assert conf["spark.jars"] == ",".join(str(j) for j in jars)
    assert "spark.jars.packages" not in conf and "spark.jars.ivySettings" not in conf
    # A cluster's driver: its executors fetch spark.jars; the driver itself starts with the
    # class path a local driver has, so the one class archive fits both.
    assert conf[DRIVER_CLASS_PATH] == _base_conf(SparkSettings(master="local[2]"))[
        DRIVER_CLASS_PATH]


def test_a_local_driver_has_the_jars_on_its_class_path_after_sparks_own(cache: Path) -> None:
    """The executor is the driver: nothing to hand over through the file server."""
    jars = _jars(cache / "ivy", "io.delta_delta-spark_4.2_2.13-4.4.0.jar", "other.jar")
    resolved_jars_file().parent.mkdir(parents=True)
    resolved_jars_file().write_text("\n".join(str(j) for j in jars) + "\n")
    spark_jars = spark_jars_dir()
    assert spark_jars is not None
    for master in ("local", "local[2]", "local[*]"):
        conf = _base_conf(SparkSettings(master=master))
        if "spark.jars.packages" not in conf and "ivy" not in conf.get(DRIVER_CLASS_PATH, ""):
            pytest.skip("this checkout has Maven-fetched jars (.headwater/jars)")
        assert conf[DRIVER_CLASS_PATH].split(os.pathsep) == [
            str(spark_jars / "*"), *(str(j) for j in jars)]
        assert not any(key.startswith("spark.jars") for key in conf if key != "spark.jars.excludes")
        assert local_driver_class_path() == conf[DRIVER_CLASS_PATH]
    # local-cluster runs executors in JVMs of their own: they fetch spark.jars.
    assert "spark.jars" in _base_conf(SparkSettings(master="local-cluster[2,1,1024]"))


def test_a_users_own_driver_class_path_comes_first(cache: Path) -> None:
    jars = _jars(cache / "ivy", "io.delta_delta-spark_4.2_2.13-4.4.0.jar")
    resolved_jars_file().parent.mkdir(parents=True)
    resolved_jars_file().write_text(f"{jars[0]}\n")
    ours = _base_conf(SparkSettings(master="local[2]"))
    archive = archive_path(ours[DRIVER_CLASS_PATH])  # as if scripts/setup had built it
    assert archive is not None
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"")
    assert f"-XX:SharedArchiveFile={archive}" in _base_conf(
        SparkSettings(master="local[2]"))["spark.driver.extraJavaOptions"]
    users = {DRIVER_CLASS_PATH: "/opt/my.jar"}
    ours = _base_conf(SparkSettings(master="local[2]", conf=users))
    merged = {**ours, **users}
    _merge_class_path(merged, ours, users)  # as get_spark merges the user's settings
    assert merged[DRIVER_CLASS_PATH] == f"/opt/my.jar{os.pathsep}{ours[DRIVER_CLASS_PATH]}"
    # The archive was built for our class path alone: the JVM would refuse it with theirs.
    assert "-XX:SharedArchiveFile" not in merged["spark.driver.extraJavaOptions"]


def test_a_list_naming_a_missing_jar_is_not_used(cache: Path) -> None:
    jars = _jars(cache / "ivy", "io.delta_delta-spark_4.2_2.13-4.4.0.jar")
    resolved_jars_file().parent.mkdir(parents=True)
    resolved_jars_file().write_text(f"{jars[0]}\n{cache / 'ivy' / 'gone.jar'}\n")
    conf = _base_conf(SparkSettings(master="local[*]"))
    assert "gone.jar" not in conf.get("spark.jars", "") + conf.get(DRIVER_CLASS_PATH, "")


def test_settings_naming_their_own_jars_go_through_ivy(cache: Path) -> None:
    jars = _jars(cache / "ivy", "io.delta_delta-spark_4.2_2.13-4.4.0.jar")
    resolved_jars_file().parent.mkdir(parents=True)
    resolved_jars_file().write_text(f"{jars[0]}\n")
    conf = _base_conf(SparkSettings(master="local[*]",
                                    conf={"spark.jars.packages": "org.postgresql:postgresql:1"}))
    assert str(jars[0]) not in conf.get("spark.jars", "") + conf.get(DRIVER_CLASS_PATH, "")
