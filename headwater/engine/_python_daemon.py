"""The Python workers' daemon, importing PySpark from its installed package.

Spark starts each executor's Python daemon with ``pyspark.zip`` first on
``PYTHONPATH``, and every worker the daemon forks imports ``pyspark.worker``
and the SQL modules from that zip.  Python caches no bytecode for a zip, so
each worker compiles several hundred modules anew: about 0.7 s of the first
Python task of every new JVM on a 2-core machine, which a small sync (a cold
``headwater sync`` of a few thousand rows) pays in full.

When the zip is the one shipped inside this very installation of PySpark (a
``pip install pyspark``: ``<site-packages>/pyspark/python/lib/pyspark.zip``),
the installed package holds the same modules with cached bytecode, so this
daemon drops the zip from ``sys.path`` before the workers are forked.  When the
zip belongs to another Spark (a cluster's own ``SPARK_HOME``), it is left
first, as Spark put it.  ``_spark`` names this module as
``spark.python.daemon.module`` only where the executors run the driver's own
Python installation (a local master).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def _installed_pyspark_dir(path: list[str]) -> Path | None:
    """The folder of the ``pyspark`` package ``path`` finds, without any zip."""
    saved = sys.path[:]
    try:
        sys.path[:] = path
        spec = importlib.util.find_spec("pyspark")
    finally:
        sys.path[:] = saved
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def drop_shipped_zip(path: list[str]) -> list[str]:
    """``path`` without the ``pyspark.zip`` of the installed package it would import."""
    zips = [entry for entry in path if Path(entry).name == "pyspark.zip"]
    if not zips:
        return path
    rest = [entry for entry in path if entry not in zips]
    installed = _installed_pyspark_dir(rest)
    if installed is None:
        return path
    shipped = {installed / "python" / "lib" / "pyspark.zip"}
    if not all(Path(entry).resolve() in shipped for entry in zips):
        return path
    return rest


if __name__ == "__main__":
    sys.path[:] = drop_shipped_zip(sys.path)
    from pyspark.daemon import manager

    manager()
