"""What Delta Lake needs of a Spark session: its jars, its extension, its catalog, tuning.

The engine starts sessions from :data:`SPARK_NEEDS` (through the destination's
capabilities) and knows nothing of Delta itself.
"""

from __future__ import annotations

import os

from headwater.destinations._base import SparkRequirements

#: delta-spark 4.4.1 on PyPI pairs with Spark 4.2, but Maven Central publishes the
#: Spark-4.2 build of the jars only as 4.4.0 (checked 2026-11-22); the Python API is
#: the same, so the jar version is pinned separately from the Python package.
DELTA_JAR_VERSION = "4.4.0"
DELTA_PACKAGE = f"io.delta:delta-spark_4.2_2.13:{DELTA_JAR_VERSION}"
DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"

SPARK_NEEDS = SparkRequirements(
    packages=(DELTA_PACKAGE,),
    maven_artifacts=(DELTA_PACKAGE, f"io.delta:delta-storage:{DELTA_JAR_VERSION}"),
    conf={
        "spark.sql.extensions": DELTA_EXTENSION,
        "spark.sql.catalog.spark_catalog": DELTA_CATALOG,
        # MERGE reads its source once even when the source is a Python reader.
        "spark.databricks.delta.merge.materializeSource": "auto",
    },
    local_conf={
        # Delta rebuilds a table's snapshot in this many tasks on every idempotent
        # commit; the default 50 costs ~3 s per commit on a laptop (bench/RESULTS.md).
        "spark.databricks.delta.snapshotPartitions": str(os.cpu_count() or 2),
    },
    jar_prefix="delta-spark",
)
