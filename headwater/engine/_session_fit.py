"""Which of a sync's Spark settings a session already running does not have.

Why: a process runs one Spark session, and :func:`~headwater.engine.get_spark` takes
a running one as it is (``serve`` and the web page run every connection's syncs in
theirs, a notebook has its own).  A connection's ``spark.master`` and ``spark.conf``
then act only where they already are the session's: another connection's shuffle
partitions, S3 endpoint or keys would be used instead, with nothing said.  This
module finds the settings that would not act, by their place in the connection file
(``spark.master``, ``spark.conf.<key>``), so they are refused or reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Settings a session is started with the user's value inside a longer one of ours
#: (``get_spark`` adds the destination's jars and its JVM options beside them).
MERGED = ("spark.driver.extraClassPath", "spark.driver.extraJavaOptions")
_HADOOP = "spark.hadoop."


def unapplied_settings(spark: SparkSession, master: str | None,
                       conf: Mapping[str, str]) -> list[str]:
    """The fields of ``master`` and ``conf`` (a connection's, or a command's) that the
    running ``spark`` does not hold, as ``spark.master`` / ``spark.conf.<key>``.

    A ``spark.hadoop.*`` setting holds where the session's Hadoop configuration has it
    (without the prefix), as Spark's readers and writers see it.
    """
    try:
        context: Any = spark.sparkContext
    except Exception:  # Spark Connect: configured on its server, nothing to compare here
        return []
    found = [] if not master or context.master == master else ["spark.master"]
    hadoop = context._jsc.hadoopConfiguration()
    for key, value in conf.items():
        current = spark.conf.get(key, None)
        if key in MERGED:
            holds = current is not None and value in current
        else:
            holds = current == value or (key.startswith(_HADOOP)
                                         and hadoop.get(key[len(_HADOOP):]) == value)
        if not holds:
            found.append(f"spark.conf.{key}")
    return found


__all__ = ["MERGED", "unapplied_settings"]
