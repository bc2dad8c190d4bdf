"""Make Delta Lake's jars available before the first sync (run by ``scripts/setup``).

The standard way is Ivy through ``spark.jars.packages``: starting one local
session resolves and caches the pinned jars.  Where Ivy cannot reach Maven
Central, Maven can often still (it honours ``~/.m2/settings.xml`` mirrors and
proxies), so the fallback copies the same pinned jars with
``mvn dependency:copy`` into :func:`~headwater.engine._spark.maven_jars_dir`,
which ``_spark`` then puts on ``spark.jars``.  It works the same from an installed
wheel: ``python -m headwater.engine._jars``.

Then it builds the driver JVM's class archive (:mod:`~headwater.engine._class_archive`),
once per Java and Spark.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from headwater.engine import _class_archive
from headwater.engine._spark import (
    DELTA_JAR_VERSION,
    SparkSettings,
    delta_jars_dir,
    get_spark,
    maven_jars_dir,
)

JARS = [
    f"io.delta:delta-spark_4.2_2.13:{DELTA_JAR_VERSION}",
    f"io.delta:delta-storage:{DELTA_JAR_VERSION}",
]


def fetch_with_maven(target: Path) -> None:
    if shutil.which("mvn") is None:
        raise SystemExit("Ivy could not resolve Delta's jars and Maven (mvn) is not installed")
    target.mkdir(parents=True, exist_ok=True)
    for artifact in JARS:
        subprocess.run(["mvn", "-q", "dependency:copy", f"-Dartifact={artifact}",
                        f"-DoutputDirectory={target}"], check=True)


def main() -> None:
    fetch_jars()
    class_archive()


def class_archive() -> None:
    """Build the driver JVM's class archive once (see ``_class_archive``)."""
    path = _class_archive.archive_path()
    if path is not None and path.is_file():
        print(f"JVM class archive: {path}")
        return
    print("JVM class archive: building it with a small training sync (once, about 30 s)")
    built = _class_archive.build()
    print(f"JVM class archive: {built}" if built is not None else
          "JVM class archive: not built (Spark starts without it; see the warning above)")


def fetch_jars() -> None:
    if delta_jars_dir() is not None:
        print(f"Delta jars: {delta_jars_dir()} (fetched earlier with Maven)")
        return
    log = _class_archive.cache_dir() / "logs" / "setup-spark.log"
    try:
        spark = get_spark(SparkSettings(master="local[1]", jvm_log_path=log))
        spark.range(1).count()
        spark.stop()
        print("Delta jars: resolved by Ivy (spark.jars.packages)")
    except Exception as exc:
        target = maven_jars_dir()
        print(f"Ivy could not resolve Delta's jars ({type(exc).__name__}); see {log}. "
              f"Falling back to mvn dependency:copy into {target}", file=sys.stderr)
        fetch_with_maven(target)
        print(f"Delta jars: {target}")


if __name__ == "__main__":
    main()
