#!/usr/bin/env bash
# Download every jar used by the study into /tmp/hw19-research/jars (curl from Maven Central).
set -euo pipefail
cd "$(dirname "$0")/../jars"
M=https://repo1.maven.org/maven2
get() { # group artifact version
  local p="$M/${1//.//}/$2/$3/$2-$3.jar"
  [ -s "$2-$3.jar" ] || curl -sfSLO "$p"
  echo "$(du -h "$2-$3.jar" | cut -f1) $1:$2:$3"
}
get org.apache.iceberg iceberg-spark-runtime-4.1_2.13 1.12.0
get org.apache.iceberg iceberg-spark-runtime-4.1_2.13 1.11.0
get org.apache.iceberg iceberg-spark-runtime-4.0_2.13 1.11.0
get org.apache.iceberg iceberg-spark-runtime-4.0_2.13 1.10.2
get org.apache.iceberg iceberg-spark-runtime-3.5_2.13 1.11.0
get io.delta delta-spark_4.2_2.13 4.4.0
get io.delta delta-spark_4.1_2.13 4.4.0
get io.delta delta-storage 4.4.0
get org.xerial sqlite-jdbc 3.54.1.0
get org.postgresql postgresql 42.7.14
