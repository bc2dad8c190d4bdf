"""The shared session starts as every local sync does: from the class archive
``scripts/setup`` built, with Python workers importing PySpark from its package."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from headwater.engine import _class_archive, _unsigned_jars
from headwater.engine._spark import DRIVER_CLASS_PATH, local_driver_class_path


def test_python_workers_import_pyspark_from_the_installed_package(spark: Any) -> None:
    def where(batches: Any) -> Any:
        import sys

        import pyspark

        for _ in batches:
            zips = [entry for entry in sys.path if entry.endswith("pyspark.zip")]
            yield pa.RecordBatch.from_pydict({"file": [pyspark.__file__],
                                              "zips": [",".join(zips)]})

    rows = spark.range(0, 2, 1, 2).mapInArrow(where, "file string, zips string").collect()
    assert len(rows) == 2
    for row in rows:
        assert ".zip" not in row.file and row.file.endswith("__init__.py")
        assert row.zips == ""


def test_the_driver_jvm_maps_the_class_archive_setup_built(spark: Any) -> None:
    class_path = spark.sparkContext.getConf().get(DRIVER_CLASS_PATH, "")
    assert class_path == local_driver_class_path()  # what scripts/setup built it for
    archive = _class_archive.archive_path(class_path)
    assert archive is not None and archive.is_file(), "scripts/setup builds the class archive"
    jvm = spark.sparkContext._jvm
    arguments = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
                     .getInputArguments())
    assert f"-XX:SharedArchiveFile={archive}" in arguments
    # -Xshare:on refuses to start when the archive does not fit this JVM's class path.
    class_path = jvm.java.lang.System.getProperty("java.class.path")
    java = _class_archive._java()
    assert java is not None
    checked = subprocess.run([str(java), "-Xshare:on", f"-XX:SharedArchiveFile={archive}",
                              "-cp", class_path, "-version"],
                             capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_a_local_driver_collects_garbage_with_the_serial_collector(spark: Any) -> None:
    if any("GC" in os.environ.get(name, "") for name in ("JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS")):
        pytest.skip("the environment chooses the JVM's collector")
    jvm = spark.sparkContext._jvm
    names = [bean.getName() for bean in
             jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()]
    assert names == ["Copy", "MarkSweepCompact"]  # the serial collector's young and old


#: The destinations' jars as Ivy names them: on the driver's class path, never served.
DESTINATION_JARS = ("io.delta_", "org.apache.hadoop_hadoop-aws", "software.amazon.awssdk_")


def _destination_jars(names: list[str]) -> list[str]:
    return [n for n in names if n.rsplit("/", 1)[-1].startswith(DESTINATION_JARS)]


def test_a_local_executor_fetches_no_jars(spark: Any) -> None:
    """The destination's jars are on the driver's class path, after Spark's own: nothing
    goes through the file server into ``userFiles-*`` to be opened a second time."""
    from pyspark import SparkFiles

    context = spark.sparkContext
    assert context.getConf().get("spark.jars", "") == ""
    # A jdbc source's test may have added a JDBC driver and its dependencies to this shared
    # session (ADD JAR, as the jdbc source adds one to a running session): those are served
    # to executors, as they must be; the destinations' jars never are.
    listed = context._jsc.sc().listJars()
    served = [str(listed.apply(i)) for i in range(listed.size())]
    assert _destination_jars(served) == [], served
    spark.range(1).count()  # a task has run: the executor has taken what it was given
    fetched = [p.name for p in Path(SparkFiles.getRootDirectory()).glob("*.jar")]
    assert _destination_jars(fetched) == [], fetched
    jvm = context._jvm
    loader = jvm.java.lang.ClassLoader.getSystemClassLoader()
    delta = jvm.java.lang.Class.forName("io.delta.tables.DeltaTable", False, loader)
    assert delta.getClassLoader().equals(loader)
    # Spark's own jars still come first: Ivy's older jackson-databind does not shadow them.
    mapper = jvm.java.lang.Class.forName("com.fasterxml.jackson.databind.ObjectMapper",
                                         False, loader)
    where = str(mapper.getProtectionDomain().getCodeSource().getLocation())
    assert _class_archive.spark_jars_dir() is not None
    assert "/pyspark/jars/" in where or str(_class_archive.spark_jars_dir()) in where


def test_janino_comes_unsigned_from_the_copy_setup_made(spark: Any) -> None:
    """Classes of a signed jar stay out of the class archive: the copy has none to check."""
    copies = _unsigned_jars.copies()
    assert copies, "scripts/setup makes unsigned copies of Spark's signed jars"
    jvm = spark.sparkContext._jvm
    loader = jvm.java.lang.ClassLoader.getSystemClassLoader()
    compiler = jvm.java.lang.Class.forName("org.codehaus.janino.SimpleCompiler", False, loader)
    assert compiler.getSigners() is None
    where = str(compiler.getProtectionDomain().getCodeSource().getLocation())
    assert any(where.endswith(str(copy)) for copy in copies), where
    # And code generation still works: a query Spark compiles with Janino.
    assert spark.range(10).selectExpr("sum(id * 2) AS s").collect()[0].s == 90
