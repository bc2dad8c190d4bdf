#!/usr/bin/env bash
# Nessie 0.99.0 (Iceberg REST at /iceberg) on 127.0.0.1:19120, RocksDB version store, local-FS warehouse.
#   scripts/nessie_server.sh start|stop
set -euo pipefail
cd "$(dirname "$0")/.."
JAR=rest/nessie-quarkus-0.99.0-runner.jar
D=/tmp/hw19-research/tmp/nessie; PORT=${NESSIE_PORT:-19120}
case "${1:-start}" in
start)
  [ -s "$JAR" ] || curl -sfSL -o "$JAR" https://repo1.maven.org/maven2/org/projectnessie/nessie/nessie-quarkus/0.99.0/nessie-quarkus-0.99.0-runner.jar
  mkdir -p "$D/rocks" "$D/warehouse"
  t0=$(date +%s.%N)
  # its class files are Java 21 (version 65): Java 17 refuses them; use the Temurin 25 on this machine
  JAVA=${NESSIE_JAVA:-/usr/lib/jvm/temurin-25-jdk-amd64/bin/java}
  nohup "$JAVA" -Xmx512m \
    -Dquarkus.http.host=127.0.0.1 -Dquarkus.http.port=$PORT -Dquarkus.management.enabled=false \
    -Dnessie.version.store.type=ROCKSDB -Dnessie.version.store.persist.rocks.database-path=$D/rocks \
    -Dnessie.catalog.default-warehouse=warehouse \
    -Dnessie.catalog.warehouses.warehouse.location=file://$D/warehouse \
    -Dnessie.server.authentication.enabled=false \
    -jar "$JAR" > logs/nessie.log 2>&1 &
  echo $! > "$D/pid"
  for i in $(seq 1 240); do
    if curl -sf "http://127.0.0.1:$PORT/iceberg/v1/config" >/dev/null 2>&1; then
      echo "nessie up on :$PORT after $(echo "$(date +%s.%N) - $t0" | bc) s (pid $(cat $D/pid))"; exit 0; fi
    sleep 0.5
  done
  echo "nessie did not come up"; tail -30 logs/nessie.log; exit 1;;
stop) kill "$(cat $D/pid)" && echo stopped;;
esac
