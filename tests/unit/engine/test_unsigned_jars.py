"""Unsigned copies of Spark's signed jars (``headwater.engine._unsigned_jars``)."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pytest

from headwater.engine import _unsigned_jars
from headwater.engine._class_archive import CACHE_ENV, spark_jars_dir
from headwater.engine._spark import (
    DRIVER_CLASS_PATH,
    LOCAL_JARS_ENV,
    SparkSettings,
    _base_conf,
    resolved_jars_file,
)

CLASS = b"\xca\xfe\xba\xbe not really a class"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(LOCAL_JARS_ENV, raising=False)
    return tmp_path


def _jar(path: Path, *, signed: bool) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as jar:
        jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
        if signed:
            jar.writestr("META-INF/SIGNER.SF", "Signature-Version: 1.0\n")
            jar.writestr("META-INF/SIGNER.RSA", b"\x30\x82")
        jar.writestr("org/example/A.class", CLASS)
        jar.writestr("META-INF/maven/pom.properties", "version=1\n")
    return path


def test_only_signed_jars_are_copied_without_their_signature(cache: Path) -> None:
    spark_jars = cache / "spark" / "jars"
    _jar(spark_jars / "janino-3.1.9.jar", signed=True)
    _jar(spark_jars / "spark-core.jar", signed=False)
    assert _unsigned_jars.copies(spark_jars) == []  # nothing made yet
    made = _unsigned_jars.make(spark_jars)
    assert [path.name for path in made] == ["janino-3.1.9.jar"]
    assert not _unsigned_jars.is_signed(made[0])
    with zipfile.ZipFile(made[0]) as copy:
        assert sorted(copy.namelist()) == [
            "META-INF/MANIFEST.MF", "META-INF/maven/pom.properties", "org/example/A.class"]
        assert copy.read("org/example/A.class") == CLASS
    assert _unsigned_jars.copies(spark_jars) == made
    assert _unsigned_jars.make(spark_jars) == made  # once


def test_a_changed_spark_jar_gets_new_copies_and_a_half_made_folder_is_not_used(
        cache: Path) -> None:
    spark_jars = cache / "spark" / "jars"
    signed = _jar(spark_jars / "janino-3.1.9.jar", signed=True)
    made = _unsigned_jars.make(spark_jars)
    os.utime(signed, (1, 1))
    assert _unsigned_jars.copies(spark_jars) == []
    where = _unsigned_jars.folder(spark_jars)
    assert where is not None and where != made[0].parent
    where.mkdir(parents=True)
    (where / "janino-3.1.9.jar").write_bytes(b"PK")  # no completion marker
    assert _unsigned_jars.copies(spark_jars) == []


def test_a_local_driver_puts_the_copies_before_sparks_jars(
        cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spark_jars = cache / "spark" / "jars"
    _jar(spark_jars / "janino-3.1.9.jar", signed=True)
    monkeypatch.setattr(_unsigned_jars, "spark_jars_dir", lambda: spark_jars)
    import headwater.engine._spark as spark_module

    monkeypatch.setattr(spark_module, "spark_jars_dir", lambda: spark_jars)
    delta = _jar(cache / "ivy" / "io.delta_delta-spark_4.2_2.13-4.4.0.jar", signed=False)
    resolved_jars_file().parent.mkdir(parents=True)
    resolved_jars_file().write_text(f"{delta}\n")
    conf = _base_conf(SparkSettings(master="local[2]"))
    if DRIVER_CLASS_PATH not in conf:
        pytest.skip("this checkout has Maven-fetched jars (.headwater/jars)")
    assert conf[DRIVER_CLASS_PATH].split(os.pathsep) == [str(spark_jars / "*"), str(delta)]
    (made,) = _unsigned_jars.make()
    conf = _base_conf(SparkSettings(master="local[2]"))
    assert conf[DRIVER_CLASS_PATH].split(os.pathsep) == [
        str(made), str(spark_jars / "*"), str(delta)]
    # A cluster's driver starts with the same class path (one archive fits both).
    cluster = _base_conf(SparkSettings(master="spark://10.0.0.1:7077"))
    assert cluster[DRIVER_CLASS_PATH] == conf[DRIVER_CLASS_PATH]
    assert cluster["spark.jars"] == str(delta)


def test_sparks_own_signed_jars_are_janinos() -> None:
    """Which of PySpark's jars are signed (why the copies exist); a new Spark may differ."""
    spark_jars = spark_jars_dir()
    assert spark_jars is not None
    signed = sorted(jar.name.rsplit("-", 1)[0] for jar in spark_jars.glob("*.jar")
                    if _unsigned_jars.is_signed(jar))
    assert signed == ["commons-compiler", "janino"]
