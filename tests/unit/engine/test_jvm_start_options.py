"""Start-up aids: the class archive's JVM options and the daemon's ``sys.path``."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pyspark
import pytest

from headwater.engine import _class_archive
from headwater.engine._python_daemon import drop_shipped_zip
from headwater.engine._spark import (
    DRIVER_JAVA_OPTIONS,
    EXTENSIONS_FROM_CLASSPATH,
    LAUNCHER_OPTIONS,
    LAUNCHER_OPTIONS_ENV,
    LAZY_JIT_OPTION,
    SERIAL_GC_OPTION,
    SparkSettings,
    _add_driver_jvm_options,
    _base_conf,
    _launcher_options,
)

SHIPPED_ZIP = str(Path(pyspark.__file__).parent / "python" / "lib" / "pyspark.zip")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(_class_archive.CACHE_ENV, str(tmp_path))
    return tmp_path


def test_the_zip_of_the_installed_pyspark_is_dropped() -> None:
    path = [SHIPPED_ZIP, "/opt/py4j-src.zip", *[p for p in sys.path if p]]
    assert SHIPPED_ZIP not in drop_shipped_zip(path)
    assert "/opt/py4j-src.zip" in drop_shipped_zip(path)


def test_another_sparks_zip_stays_first(tmp_path: Path) -> None:
    foreign = str(tmp_path / "spark-home" / "python" / "lib" / "pyspark.zip")
    path = [foreign, *[p for p in sys.path if p]]
    assert drop_shipped_zip(path) == path


def test_no_archive_no_option(cache: Path) -> None:
    assert _class_archive.driver_java_options(None) is None
    assert _base_conf(SparkSettings(master="local[*]"))[DRIVER_JAVA_OPTIONS] == \
        f"{LAZY_JIT_OPTION} {SERIAL_GC_OPTION}"


def test_an_archive_that_exists_is_mapped_beside_the_users_options(cache: Path) -> None:
    archive = _class_archive.archive_path()
    assert archive is not None and archive.is_relative_to(cache)
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"")
    ours = f"-XX:SharedArchiveFile={archive}"
    assert _class_archive.driver_java_options(None) == ours
    assert _class_archive.driver_java_options("-Xmx2g") == f"{ours} -Xmx2g"
    assert _base_conf(SparkSettings(master="local[*]"))[DRIVER_JAVA_OPTIONS] == \
        f"{ours} {LAZY_JIT_OPTION} {SERIAL_GC_OPTION}"


@pytest.mark.parametrize("own", ["-Xshare:off", "-XX:SharedArchiveFile=/x.jsa",
                                 "-XX:ArchiveClassesAtExit=/y.jsa"])
def test_the_users_own_class_sharing_options_win(cache: Path, own: str) -> None:
    archive = _class_archive.archive_path()
    assert archive is not None
    archive.parent.mkdir(parents=True)
    archive.write_bytes(b"")
    assert _class_archive.driver_java_options(f"-Xmx2g {own}") is None


@pytest.mark.parametrize("own", ["-XX:CompileThresholdScaling=1", "-XX:TieredStopAtLevel=1",
                                 "-XX:-TieredCompilation", "-Xint"])
def test_the_users_own_jit_choice_wins(cache: Path, own: str) -> None:
    conf = {DRIVER_JAVA_OPTIONS: f"-Xmx2g {own}"}
    _add_driver_jvm_options(conf)
    assert conf[DRIVER_JAVA_OPTIONS] == f"-Xmx2g {own}"
    conf = {DRIVER_JAVA_OPTIONS: "-Xmx2g"}
    _add_driver_jvm_options(conf)
    assert conf[DRIVER_JAVA_OPTIONS] == f"-Xmx2g {LAZY_JIT_OPTION}"


@pytest.mark.parametrize("where", ["JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS",
                                   "spark.driver.defaultJavaOptions"])
def test_a_jit_choice_made_elsewhere_wins_too(
        cache: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    # The JVM reads these variables itself, and Spark puts the default options first:
    # our option on the command line would override the user's choice made there.
    conf = {DRIVER_JAVA_OPTIONS: "-Xmx2g"}
    if where.startswith("spark."):
        conf[where] = "-XX:CompileThresholdScaling=1"
    else:
        monkeypatch.setenv(where, "-XX:CompileThresholdScaling=1")
    _add_driver_jvm_options(conf)
    assert conf[DRIVER_JAVA_OPTIONS] == "-Xmx2g"


def test_a_local_driver_collects_with_the_serial_collector_unless_told_otherwise(
        cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def options(master: str, **conf: str) -> str:
        settings = SparkSettings(master=master, conf={k.replace("_", "."): v
                                                      for k, v in conf.items()})
        return _base_conf(settings).get(DRIVER_JAVA_OPTIONS, "")

    assert SERIAL_GC_OPTION in options("local[2]")
    assert SERIAL_GC_OPTION in options("local[*]", spark_driver_memory="2g")
    # A cluster's driver, a big local heap, or a collector the user chose keep theirs.
    assert SERIAL_GC_OPTION not in options("spark://10.0.0.1:7077")
    assert SERIAL_GC_OPTION not in options("local[*]", spark_driver_memory="16g")
    assert SERIAL_GC_OPTION not in options("local[*]", spark_driver_memory="lots")
    for own in ("-XX:+UseG1GC", "-XX:+UseParallelGC", "-XX:ParallelGCThreads=1"):
        conf = {DRIVER_JAVA_OPTIONS: f"-Xmx2g {own}"}
        _add_driver_jvm_options(conf, local=True)
        assert conf[DRIVER_JAVA_OPTIONS] == f"-Xmx2g {own} {LAZY_JIT_OPTION}"
    monkeypatch.setenv("JAVA_TOOL_OPTIONS", "-XX:+UseZGC")
    assert SERIAL_GC_OPTION not in options("local[2]")


def test_our_options_are_added_once_when_the_session_conf_is_merged(cache: Path) -> None:
    conf = _base_conf(SparkSettings(master="local[2]"))
    before = conf[DRIVER_JAVA_OPTIONS]
    _add_driver_jvm_options(conf, local=True)  # get_spark's second look, after the merge
    assert conf[DRIVER_JAVA_OPTIONS] == before


def test_classpath_session_extensions_are_off_on_a_local_master_unless_asked(
        cache: Path) -> None:
    assert _base_conf(SparkSettings(master="local[2]"))[EXTENSIONS_FROM_CLASSPATH] == "false"
    assert EXTENSIONS_FROM_CLASSPATH not in _base_conf(
        SparkSettings(master="spark://10.0.0.1:7077"))


def test_the_daemon_module_is_set_only_for_a_local_master(cache: Path) -> None:
    key = "spark.python.daemon.module"
    assert _base_conf(SparkSettings(master="local[2]"))[key] == "headwater.engine._python_daemon"
    assert key not in _base_conf(SparkSettings(master="spark://10.0.0.1:7077"))


def test_building_an_archive_prunes_old_ones(cache: Path) -> None:
    import os

    folder = cache / "jvm"
    folder.mkdir()
    kept = folder / "spark-classes-aaa-new.jsa"
    same_pair_older = folder / "spark-classes-aaa-old.jsa"
    others = [folder / f"spark-classes-b{i}-x.jsa" for i in range(5)]
    for age, path in enumerate([kept, same_pair_older, *others]):
        path.write_bytes(b"")
        os.utime(path, (1_000_000 - age, 1_000_000 - age))
    _class_archive.prune(kept, at_most=3)
    assert sorted(p.name for p in folder.iterdir()) == [
        "spark-classes-aaa-new.jsa", "spark-classes-b0-x.jsa", "spark-classes-b1-x.jsa"]


def test_jars_replaced_in_place_get_an_archive_of_their_own(
        cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A virtualenv made again at the same path holds the same jar names and sizes at other
    # times, and the JVM refuses an archive built over the old files: a new name, so
    # scripts/setup builds a new archive instead of keeping one the JVM will not map.
    import os

    jars = tmp_path / "jars"
    jars.mkdir()
    (jars / "spark-core.jar").write_bytes(b"x" * 10)
    monkeypatch.setattr(_class_archive, "spark_jars_dir", lambda: jars)
    before = _class_archive.archive_path()
    os.utime(jars / "spark-core.jar", (1, 1))
    after = _class_archive.archive_path()
    assert before is not None and after is not None and before != after


def test_an_archive_is_named_by_the_driver_class_path_it_was_built_for(
        cache: Path, tmp_path: Path) -> None:
    # The JVM refuses an archive whose class path differs: a driver started with another
    # extra class path (a cluster's driver, a user's own entries) looks for its own.
    delta = tmp_path / "delta.jar"
    delta.write_bytes(b"PK")
    plain, with_delta = _class_archive.archive_path(), _class_archive.archive_path(str(delta))
    assert plain is not None and with_delta is not None and plain != with_delta
    with_delta.parent.mkdir(parents=True)
    with_delta.write_bytes(b"")
    assert _class_archive.driver_java_options(None, str(delta)) == \
        f"-XX:SharedArchiveFile={with_delta}"
    assert _class_archive.driver_java_options(None) is None
    before = with_delta
    os.utime(delta, (1, 1))  # the same jar changed: the JVM would refuse the archive
    assert _class_archive.archive_path(str(delta)) != before


def test_the_launcher_jvm_gets_our_options_only_while_it_starts(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LAUNCHER_OPTIONS_ENV, raising=False)
    with _launcher_options():
        assert os.environ[LAUNCHER_OPTIONS_ENV] == LAUNCHER_OPTIONS
    assert LAUNCHER_OPTIONS_ENV not in os.environ


def test_the_users_launcher_options_win(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LAUNCHER_OPTIONS_ENV, "-Xmx256m")
    with _launcher_options():
        assert os.environ[LAUNCHER_OPTIONS_ENV] == "-Xmx256m"
    assert os.environ[LAUNCHER_OPTIONS_ENV] == "-Xmx256m"
