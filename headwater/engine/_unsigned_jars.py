"""Unsigned copies of the signed jars among Spark's own, for a local driver's class path.

Why: Spark's Janino jars (``janino``, ``commons-compiler``, the compiler of the code
Spark generates for a query) are signed, the only signed jars among Spark's and the
destinations'.  Java's class-data sharing leaves out classes of signed jars, so every
driver JVM read Janino's 361 classes from the jar at its first query, after checking
the jar's signature (a PKCS7 signature, the manifest's digest) and digesting each
class as it was read: in a Java Flight Recorder profile of a 100-row sync, about 7 %
of the JVM's Java samples before the first task finished.  A copy without the
signature files holds the same classes byte for byte; placed before Spark's jars on
the driver's class path, its classes are loaded from the class archive
(:mod:`~headwater.engine._class_archive`) like the rest.

The copies are made once, by ``scripts/setup`` (``python -m headwater.engine._jars``),
into the cache folder, in a folder named by what Spark's jars hold (a changed jar
gets new copies); a session only lists that folder.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import zipfile
from pathlib import Path

from headwater.engine._class_archive import cache_dir, spark_jars_dir

#: The files that make a jar signed (``jarsigner``'s signature file and signature block).
_SIGNATURE = re.compile(r"META-INF/[^/]+\.(SF|RSA|DSA|EC)", re.IGNORECASE)
#: Written last: a folder without it was left half made and is not used.
_COMPLETE = "complete"


def folder(spark_jars: Path | None = None) -> Path | None:
    """Where the copies for this Spark's jars are (or would be) kept; None without Spark."""
    spark_jars = spark_jars or spark_jars_dir()
    if spark_jars is None or not spark_jars.is_dir():
        return None
    digest = hashlib.sha256(str(spark_jars.resolve()).encode())
    for jar in sorted(spark_jars.glob("*.jar")):
        stat = jar.stat()
        digest.update(f"\0{jar.name}\0{stat.st_size}\0{stat.st_mtime_ns}".encode())
    return cache_dir() / "jars-unsigned" / digest.hexdigest()[:16]


def copies(spark_jars: Path | None = None) -> list[Path]:
    """The unsigned copies made for this Spark's jars, or [] if none were made."""
    where = folder(spark_jars)
    if where is None or not (where / _COMPLETE).is_file():
        return []
    return sorted(where.glob("*.jar"))


def is_signed(jar: Path) -> bool:
    with zipfile.ZipFile(jar) as archive:
        return any(_SIGNATURE.fullmatch(name) for name in archive.namelist())


def unsigned_copy(jar: Path, target: Path) -> None:
    """``jar`` without its signature files; every other entry copied as it is."""
    with zipfile.ZipFile(jar) as source, zipfile.ZipFile(target, "w") as copy:
        for entry in source.infolist():
            if not _SIGNATURE.fullmatch(entry.filename):
                copy.writestr(entry, source.read(entry), compress_type=entry.compress_type)


def make(spark_jars: Path | None = None) -> list[Path]:
    """Make the copies once (``scripts/setup``); the copies' paths."""
    spark_jars = spark_jars or spark_jars_dir()
    where = folder(spark_jars)
    if spark_jars is None or where is None:
        return []
    if (where / _COMPLETE).is_file():
        return copies(spark_jars)
    partial = where.with_name(f".{where.name}.{os.getpid()}.partial")
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    for jar in sorted(spark_jars.glob("*.jar")):
        if is_signed(jar):
            unsigned_copy(jar, partial / jar.name)
    (partial / _COMPLETE).write_text("")
    shutil.rmtree(where, ignore_errors=True)
    partial.rename(where)
    return copies(spark_jars)
