"""A class-data sharing archive for the driver JVM: Spark starts in about 2/3 of the time.

A cold ``headwater sync`` of a few thousand rows spends most of its wall time
starting Spark: on a 2-core machine the session took 6.0 s and the first job
2.6 s, nearly all of it the JVM loading and verifying Spark's classes from its
jars.  Java's class-data sharing (JEP 350, dynamic archives, JDK 13+) keeps
those classes pre-parsed in a file that later JVMs map into memory: with an
archive of a sync's classes the session took 4.0 s and the first job 1.4 s
(``bench/RESULTS.md``).

The archive is built once, by ``scripts/setup`` (``python -m
headwater.engine._jars``), from a training JVM that runs a small sync of the
``sample`` source through the engine into the default destination (task-written
files, Spark's own writer and a MERGE) and writes the classes it
loaded when it exits. It lives in the cache folder (``HEADWATER_CACHE_DIR``,
default ``~/.cache/headwater``), named by digests of where the ``java``
executable, Spark's jars and the driver's extra class path (the destination's jars
on a local master, see ``_spark``) are and of what they hold, so another JDK, Spark,
set of jars or virtual environment never picks up an archive made for a different one; the
JVM checks the class path itself too and, when it does not match, starts
without the archive (``-Xshare:auto``, Java's default), never failing. Nothing
else changes: no JIT or GC setting, so long syncs run exactly as before.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

log = logging.getLogger(__name__)

_PREFIX = "spark-classes-"
#: Archives kept in the cache folder, the newest first (one per virtual environment).
KEPT_ARCHIVES = 4

#: The JVM options that write or read an archive; a user who sets one of them in
#: ``spark.driver.extraJavaOptions`` chose their own, and we add none.
_OWN_OPTIONS = ("-XX:SharedArchiveFile", "-XX:ArchiveClassesAtExit", "-Xshare")


#: Headwater's cache folder: this archive and the list of resolved jars (``_spark``).
CACHE_ENV = "HEADWATER_CACHE_DIR"


def cache_dir() -> Path:
    """The cache folder: ``HEADWATER_CACHE_DIR``, default ``~/.cache/headwater``."""
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "headwater")


def _java() -> Path | None:
    """The ``java`` that ``spark-submit`` starts: ``$JAVA_HOME/bin/java``, else the PATH's."""
    home = os.environ.get("JAVA_HOME")
    found = Path(home) / "bin" / "java" if home else None
    if found is None or not found.is_file():
        which = shutil.which("java")
        found = Path(which) if which else None
    return found.resolve() if found is not None else None


def spark_jars_dir() -> Path | None:
    """The folder of Spark's own jars: ``$SPARK_HOME/jars``, else PySpark's package's."""
    home = os.environ.get("SPARK_HOME")
    if home:
        return Path(home) / "jars"
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "jars"


def archive_path(class_path: str = "") -> Path | None:
    """Where the archive for this ``java``, this Spark and a driver JVM started with
    ``class_path`` (``spark.driver.extraClassPath``) is (or would be) kept.

    None when either cannot be found (then no archive is used or built).
    """
    java, jars = _java(), spark_jars_dir()
    if java is None or jars is None or not jars.is_dir():
        return None
    # The class path the JVM starts with: the extra entries first (Spark's launcher puts
    # them before its own jars), then Spark's jars.
    extra = [entry for entry in class_path.split(os.pathsep) if entry]
    # One archive per (java, class path), named by where they are and what they hold:
    # the JVM validates the class path by location, so each virtualenv has its own.
    where = hashlib.sha256("\0".join([str(java), str(jars.resolve()), *extra]).encode())
    content = hashlib.sha256()
    stat = java.stat()
    content.update(f"{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    for jar in [*map(Path, extra), *sorted(jars.glob("*.jar"))]:
        try:
            jar_stat = jar.stat()  # the JVM refuses an archive whose jars changed size or time
        except OSError:
            continue
        content.update(f"{jar.name}\0{jar_stat.st_size}\0{jar_stat.st_mtime_ns}\0".encode())
    return cache_dir() / "jvm" / f"{_PREFIX}{where.hexdigest()[:12]}-{content.hexdigest()[:12]}.jsa"


def driver_java_options(user_options: str | None, class_path: str = "") -> str | None:
    """``spark.driver.extraJavaOptions`` with the archive added, or None to leave it.

    Only an archive that exists for ``class_path`` (the driver's extra class path) is
    named, and never beside the user's own class-data sharing options.
    """
    if user_options and any(option in user_options for option in _OWN_OPTIONS):
        return None
    path = archive_path(class_path)
    if path is None or not path.is_file():
        return None
    ours = f"-XX:SharedArchiveFile={path}"
    return f"{ours} {user_options}" if user_options else ours


def build(class_path: str = "", workload_dir: Path | None = None) -> Path | None:
    """Build the archive with a training JVM in a child process; its path, or None.

    ``class_path`` is the extra class path a local session's driver starts with
    (``_spark.local_driver_class_path``), which the training session gets too.
    A child process because the archive is written when its JVM exits, and the
    file appears under its final name only once complete (written under a
    temporary name, then renamed), so a sync starting meanwhile never maps half
    an archive.  Older archives are removed (:func:`prune`).
    """
    target = archive_path(class_path)
    if target is None:
        log.warning("no class archive: java or Spark's jars not found")
        return None
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.stem}.{os.getpid()}.partial")
    with tempfile.TemporaryDirectory(dir=workload_dir) as work:
        completed = subprocess.run(
            [sys.executable, "-m", "headwater.engine._class_archive", str(partial), work],
            capture_output=True, text=True, check=False)
    if completed.returncode != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        reason = (completed.stderr or completed.stdout).strip().splitlines()[-3:]
        log.warning("no class archive: the training run failed: %s", " | ".join(reason))
        return None
    partial.replace(target)
    prune(target)
    return target


def prune(kept: Path, *, at_most: int = KEPT_ARCHIVES) -> None:
    """Remove ``kept``'s older archives (same ``java`` and Spark) and all but the newest
    ``at_most`` of the others: each virtual environment has its own, 200 MB apiece."""
    where = kept.name.removeprefix(_PREFIX).split("-")[0]
    others = []
    for path in kept.parent.glob(f"{_PREFIX}*.jsa"):
        if path == kept:
            continue
        if path.name.startswith(f"{_PREFIX}{where}-"):
            path.unlink(missing_ok=True)
        else:
            others.append(path)
    others.sort(key=lambda p: p.stat().st_mtime, reverse=True)
    for path in others[at_most - 1:]:
        path.unlink(missing_ok=True)


def _train(archive: Path, work: Path) -> None:
    """The training run (in its own process): a small sync that loads what syncs load.

    Two streams of the ``sample`` source, so the JVM loads the classes of the
    task-written files' commit (``orders``, overwrite), of Spark's writer and of
    a MERGE (``users``, append_dedup) into the default destination, then exits so the archive is
    written.
    """
    from pyspark import SparkContext

    from headwater.config import load_connection
    from headwater.engine import SparkSettings, get_spark
    from headwater.metadata_store import MetadataStore
    from headwater.operations import start_engine

    settings = SparkSettings(master="local[2]", conf={
        "spark.driver.extraJavaOptions": f"-XX:ArchiveClassesAtExit={archive}"},
        jvm_log_path=work / "jvm.log")
    spark = get_spark(settings)
    connection_file = work / "training.yaml"
    connection_file.write_text(f"""
name: class-archive-training
source:
  type: sample
  config: {{users: 2000, orders: 2000, rows_per_partition: 500}}
destination:
  config: {{path: {work / 'tables'}}}
streams:
  - {{name: users, sync_mode: incremental, destination_sync_mode: append_dedup,
     cursor_field: updated_at, primary_key: [id]}}
  - {{name: orders, sync_mode: full_refresh, destination_sync_mode: overwrite}}
""")
    connection = load_connection(connection_file)
    store = MetadataStore(f"sqlite:///{work / 'state.db'}")
    for _ in range(2):  # the second run finds the tables (look-ups, MERGE into rows)
        start_engine(connection, store, spark=settings).run()  # as `headwater sync` builds it
    spark.stop()
    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if proc is not None:
        # The JVM exits when its stdin closes, and writes the archive as it exits.
        proc.stdin.close()
        proc.wait(timeout=300)
    deadline = time.monotonic() + 10
    while not archive.is_file() and time.monotonic() < deadline:
        time.sleep(0.2)


if __name__ == "__main__":
    _train(Path(sys.argv[1]), Path(sys.argv[2]))
