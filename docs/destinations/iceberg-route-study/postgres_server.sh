#!/usr/bin/env bash
# A private PostgreSQL server for Headwater's tests and benchmarks.
#
#   scripts/postgres install  # Debian's postgresql package, only when it is missing
#   scripts/postgres start    # install (Debian's postgresql) if missing, init, start; prints the URL
#   scripts/postgres stop     # stop it (the data folder stays for a quick restart)
#   scripts/postgres status   # exit 0 when it runs
#   scripts/postgres url      # postgresql://headwater:headwater@127.0.0.1:PORT/headwater
#
# Idempotent: start on a running server only prints its URL.  The server listens
# on 127.0.0.1 only, on a free port chosen at the first start, with
# wal_level=logical (change data capture), and runs as the `postgres` user when
# this script runs as root (PostgreSQL refuses to run as root).  Its data folder
# is $HEADWATER_PG_DIR, by default a folder under /tmp named after this clone.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
tag=$(printf '%s' "$root" | cksum | cut -d' ' -f1)
dir=${HEADWATER_PG_DIR:-/tmp/headwater-postgres-$tag}
data=$dir/data
port_file=$dir/port
user=headwater
password=headwater

find_bin() {
  local found
  found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
  if [ -z "$found" ]; then
    [ "$(id -u)" = 0 ] || { echo "PostgreSQL is not installed; run as root to install it" >&2; exit 2; }
    echo "==> installing Debian's postgresql package" >&2
    apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
    found=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
  fi
  echo "$found"
}

as_owner() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

url() {
  echo "postgresql://$user:$password@127.0.0.1:$(cat "$port_file")/headwater"
}

running() {
  [ -f "$data/postmaster.pid" ] && [ -f "$port_file" ] || return 1
  local bin; bin=$(find_bin)
  as_owner "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1
}

start() {
  local bin; bin=$(find_bin)
  if running; then url; return; fi
  mkdir -p "$dir"
  if [ "$(id -u)" = 0 ]; then chown postgres: "$dir"; chmod 700 "$dir"; fi
  if [ ! -f "$data/PG_VERSION" ]; then
    echo "==> initialising a PostgreSQL cluster in $data" >&2
    local pwfile="$dir/pw"
    printf '%s\n' "$password" > "$pwfile"
    [ "$(id -u)" = 0 ] && chown postgres: "$pwfile"
    as_owner "$bin/initdb" -D "$data" -U postgres --pwfile="$pwfile" --auth-local=trust \
      --auth-host=scram-sha-256 -E UTF8 --locale=C.UTF-8 >/dev/null
    rm -f "$pwfile"
    free_port > "$port_file"
    cat >> "$data/postgresql.conf" <<EOF
# Headwater test server (scripts/postgres)
listen_addresses = '127.0.0.1'
port = $(cat "$port_file")
unix_socket_directories = '$dir'
wal_level = logical
max_replication_slots = 20
max_wal_senders = 20
max_connections = 100
fsync = off
synchronous_commit = off
full_page_writes = off
shared_buffers = 256MB
timezone = 'UTC'
EOF
  fi
  # The port chosen at init may have been taken since; pick a new one if so.
  if ! python3 -c "import socket,sys; s=socket.socket(); s.bind(('127.0.0.1', int(sys.argv[1])))" \
       "$(cat "$port_file")" 2>/dev/null; then
    free_port > "$port_file"
    sed -i "s/^port = .*/port = $(cat "$port_file")/" "$data/postgresql.conf"
  fi
  as_owner "$bin/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 60 start >/dev/null
  # The application role and database (superuser: tests create publications and slots).
  as_owner "$bin/psql" -h "$dir" -p "$(cat "$port_file")" -U postgres -d postgres -qAt \
    -v ON_ERROR_STOP=1 >/dev/null <<EOF
SELECT 'CREATE ROLE $user LOGIN SUPERUSER REPLICATION PASSWORD ''$password'''
WHERE NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$user') \gexec
SELECT 'CREATE DATABASE headwater OWNER $user'
WHERE NOT EXISTS (SELECT FROM pg_database WHERE datname = 'headwater') \gexec
EOF
  url
}

stop() {
  [ -f "$data/PG_VERSION" ] || return 0
  local bin; bin=$(find_bin)
  if running; then as_owner "$bin/pg_ctl" -D "$data" -m fast -w stop >/dev/null; fi
}

case "${1:-}" in
  install) find_bin >/dev/null ;;
  start) start ;;
  stop) stop ;;
  status) running ;;
  url) running && url ;;
  *) echo "usage: scripts/postgres install|start|stop|status|url" >&2; exit 2 ;;
esac
