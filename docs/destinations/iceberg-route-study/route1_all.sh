#!/usr/bin/env bash
# Route 1: every downloaded iceberg-spark-runtime jar against PySpark 4.2.0 (one JVM at a time).
cd "$(dirname "$0")/.."
PY=${PY:-venv42/bin/python}
for jar in jars/iceberg-spark-runtime-*.jar; do
  for variant in "ext SparkCatalog" "noext SparkCatalog" "ext SparkSessionCatalog"; do
    echo "=== $jar $variant"
    timeout 300 $PY scripts/route1_iceberg_on_spark.py "$PWD/$jar" $variant 2>logs/route1-$(basename $jar .jar)-${variant// /-}.err | grep -E "^(OK|FAIL|RESULT|pyspark)"
  done
done
