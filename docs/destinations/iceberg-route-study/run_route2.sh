#!/usr/bin/env bash
# Route 2 with the PostgreSQL catalog server from scripts/postgres_server.sh.
cd "$(dirname "$0")/.."
PG=$(HEADWATER_PG_DIR=/tmp/hw19-research/pg scripts/postgres_server.sh start | tail -1)
hp=${PG#*@}
# fresh catalog state: the warehouse folders are deleted per run, so drop the stale catalog rows too
psql "$PG" -q -c "DROP TABLE IF EXISTS iceberg_tables, iceberg_namespace_properties" 2>/dev/null || true
export PG_JDBC="jdbc:postgresql://$hp" PG_USER=headwater PG_PASSWORD=headwater
venv41/bin/python scripts/route2_spark41.py "${1:-1.12.0}" "${2:-delta-first}" 2>logs/route2-${1:-1.12.0}-${2:-delta-first}.err
