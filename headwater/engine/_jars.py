"""Make the destinations' jars available before the first sync (run by ``scripts/setup``).

The standard way is Ivy through ``spark.jars.packages``: starting one local
session resolves and caches the pinned jars every built-in destination names
(``Destination.capabilities.spark``).  Where Ivy cannot reach Maven Central,
Maven can often still (it honours ``~/.m2/settings.xml`` mirrors and proxies),
so the fallback copies the artifacts the destinations name for it with
``mvn dependency:copy`` into :func:`~headwater.engine._spark.maven_jars_dir`,
which ``_spark`` then puts on ``spark.jars``.  It works the same from an
installed wheel: ``python -m headwater.engine._jars``.

Then it makes unsigned copies of Spark's signed jars (:mod:`~headwater.engine._unsigned_jars`)
and builds the driver JVM's class archive (:mod:`~headwater.engine._class_archive`) for the
class path a local driver starts with, once per Java, Spark and set of jars.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from headwater.engine import _class_archive, _unsigned_jars
from headwater.engine._spark import (
    SparkSettings,
    _cached_jars,
    fetched_jars_dir,
    get_spark,
    local_driver_class_path,
    maven_jars_dir,
    resolved_jars_file,
)


def fetch_with_maven(artifacts: tuple[str, ...], target: Path) -> None:
    if shutil.which("mvn") is None:
        raise SystemExit("Ivy could not resolve the jars and Maven (mvn) is not installed")
    target.mkdir(parents=True, exist_ok=True)
    for artifact in artifacts:
        subprocess.run(["mvn", "-q", "dependency:copy", f"-Dartifact={artifact}",
                        f"-DoutputDirectory={target}"], check=True)


def missing_artifacts(artifacts: tuple[str, ...], folder: Path) -> tuple[str, ...]:
    """The ``group:artifact:version`` coordinates whose jar (``artifact-version.jar``,
    as ``mvn dependency:copy`` names it) is not in ``folder``."""
    def jar_name(artifact: str) -> str:
        _, name, version = artifact.split(":")[:3]
        return f"{name}-{version}.jar"

    return tuple(a for a in artifacts if not (folder / jar_name(a)).is_file())


def main() -> None:
    fetch_jars()
    unsigned_jars()
    class_archive()


def unsigned_jars() -> None:
    """Unsigned copies of Spark's signed jars, for the class archive (see ``_unsigned_jars``)."""
    made = _unsigned_jars.make()
    print(f"unsigned copies of Spark's signed jars: {', '.join(p.name for p in made) or 'none'}")


def class_archive() -> None:
    """Build the driver JVM's class archive once (see ``_class_archive``)."""
    class_path = local_driver_class_path()
    path = _class_archive.archive_path(class_path)
    if path is not None and path.is_file():
        print(f"JVM class archive: {path}")
        return
    print("JVM class archive: building it with a small training sync (once, about 30 s)")
    built = _class_archive.build(class_path)
    print(f"JVM class archive: {built}" if built is not None else
          "JVM class archive: not built (Spark starts without it; see the warning above)")


def fetch_jars() -> None:
    settings = SparkSettings(master="local[1]",
                             jvm_log_path=_class_archive.cache_dir() / "logs" / "setup-spark.log")
    needs = settings.needs()
    if not needs.packages:
        return
    fetched = fetched_jars_dir(needs)
    if fetched is not None:
        # A folder filled before the S3 connector was needed lacks its jars: add them.
        missing = missing_artifacts(needs.maven_artifacts, fetched)
        if missing:
            fetch_with_maven(missing, fetched)
        print(f"jars: {fetched} (fetched earlier with Maven)")
        return
    if _cached_jars(needs) is not None:
        print(f"jars: {', '.join(needs.packages)} resolved by Ivy earlier "
              f"({resolved_jars_file(needs)})")
        return
    try:
        spark = get_spark(settings)
        spark.range(1).count()
        spark.stop()
        print(f"jars: {', '.join(needs.packages)} resolved by Ivy (spark.jars.packages)")
    except Exception as exc:
        target = maven_jars_dir()
        print(f"Ivy could not resolve {', '.join(needs.packages)} ({type(exc).__name__}); see "
              f"{settings.jvm_log_path}. Falling back to mvn dependency:copy into {target}",
              file=sys.stderr)
        fetch_with_maven(needs.maven_artifacts, target)
        print(f"jars: {target}")


if __name__ == "__main__":
    main()
