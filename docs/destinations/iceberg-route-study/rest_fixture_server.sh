#!/usr/bin/env bash
# Apache Iceberg's own REST catalog server (the code behind the apache/iceberg-rest-fixture image):
# org.apache.iceberg.rest.RESTCatalogServer from org.apache.iceberg:iceberg-open-api:1.11.0:test-fixtures,
# its classpath resolved from Maven Central by rest/fixture/pom.xml. Backend: JdbcCatalog on a SQLite file,
# warehouse on the local file system. Listens on 127.0.0.1:$PORT (Jetty binds all interfaces by default;
# only loopback is used here).   scripts/rest_fixture_server.sh start|stop
set -euo pipefail
cd "$(dirname "$0")/.."
D=/tmp/hw19-research/tmp/restfx; PORT=${REST_PORT:-8181}
case "${1:-start}" in
start)
  [ -d rest/fixture/lib ] || (mkdir -p rest/fixture && cp scripts/rest-fixture-pom.xml rest/fixture/pom.xml && cd rest/fixture && mvn -q dependency:copy-dependencies -DoutputDirectory=lib)
  mkdir -p "$D/warehouse"
  t0=$(date +%s.%N)
  CATALOG_REST_PORT=$PORT CATALOG_CATALOG__NAME=rest \
  CATALOG_URI="jdbc:sqlite:$D/catalog.db" CATALOG_JDBC_SCHEMA__VERSION=V1 \
  CATALOG_WAREHOUSE="file://$D/warehouse" \
  nohup java -Xmx512m -cp "rest/fixture/lib/*" org.apache.iceberg.rest.RESTCatalogServer > logs/restfx.log 2>&1 &
  echo $! > "$D/pid"
  for i in $(seq 1 120); do
    if curl -sf "http://127.0.0.1:$PORT/v1/config" >/dev/null 2>&1; then
      echo "REST fixture up on :$PORT after $(echo "$(date +%s.%N) - $t0" | bc) s (pid $(cat $D/pid))"; exit 0; fi
    kill -0 "$(cat $D/pid)" 2>/dev/null || break
    sleep 0.25
  done
  echo "REST fixture did not come up"; tail -30 logs/restfx.log; exit 1;;
stop) kill "$(cat $D/pid)" && echo stopped;;
esac
