# scripts/temporal-pg.sh's PostgreSQL: finding (or installing) its binaries,
# initdb of a loopback-only cluster with a generated password, starting it in
# its own process group, and Temporal's databases and schema from the module's
# files (temporal-sql-tool). Sourced by scripts/temporal-pg.sh, not run: it
# uses the script's settings (STATE, DATA, RUN, LOGS, HOST, PG_PORT, DB_USER,
# BIN_DIR, PG_BIN, NODES) and log/die.

pg_bindir() {
  local d
  if [[ -x /usr/local/bin/pg_ctl ]]; then dirname "$(readlink -f /usr/local/bin/pg_ctl)"; return; fi
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
    [[ -x "$d/pg_ctl" ]] && { echo "$d"; return; }
  done
  command -v pg_ctl >/dev/null 2>&1 && { dirname "$(command -v pg_ctl)"; return; }
  return 1
}

# Debian's postgresql package when no PostgreSQL is found (root or sudo). Its
# own `main` cluster (port 5432) is not used here; where the package starts
# it, `pg_ctlcluster <version> main stop` stops it.
pg_install() {
  local sudo=()
  command -v apt-get >/dev/null 2>&1 || die "PostgreSQL not found (/usr/local/bin/pg_ctl, /usr/lib/postgresql/*/bin) and no apt-get: install PostgreSQL 12 or newer"
  if [[ "$(id -u)" != 0 ]]; then
    command -v sudo >/dev/null 2>&1 || die "PostgreSQL not found; need root or sudo to apt-get install postgresql"
    sudo=(sudo)
  fi
  log "PostgreSQL not found: apt-get install postgresql" >&2
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get update -qq >&2 || die "apt-get update failed (is the Debian mirror reachable?)"
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends postgresql >&2 \
    || die "apt-get install postgresql failed"
}

# Run a PostgreSQL program as the data dir's owner (`postgres` when we are root).
as_pg() {
  if [[ "$(id -u)" == 0 ]]; then
    setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"
  else
    "$@"
  fi
}

pg_password() { cat "$STATE/pg-password"; }

pg_running() { [[ -f "$DATA/postmaster.pid" ]] && as_pg "$PG_BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; }

pg_init() {
  [[ -f "$DATA/PG_VERSION" ]] && return 0
  log "initdb $DATA (user $DB_USER, password auth on 127.0.0.1 only)"
  mkdir -p "$STATE"
  if [[ ! -f "$STATE/pg-password" ]]; then
    (umask 077; head -c 24 /dev/urandom | base64 | tr -d '/+=' >"$STATE/pg-password")
  fi
  mkdir -p "$DATA"
  chmod 700 "$DATA"
  local pwfile="$STATE/pg-password.init"
  cp "$STATE/pg-password" "$pwfile"
  if [[ "$(id -u)" == 0 ]]; then chown -R postgres:postgres "$DATA" "$pwfile"; fi
  as_pg "$PG_BIN/initdb" -D "$DATA" -U "$DB_USER" --pwfile="$pwfile" -E UTF8 --locale=C.UTF-8 \
    --auth-local=scram-sha-256 --auth-host=scram-sha-256 >"$LOGS/initdb.log" 2>&1 \
    || { rm -f "$pwfile"; die "initdb failed: see $LOGS/initdb.log"; }
  rm -f "$pwfile"
  # Loopback only: no socket in /var/run, TCP on 127.0.0.1.
  cat >>"$DATA/postgresql.conf" <<EOF
# scripts/temporal-pg.sh
listen_addresses = '$HOST'
unix_socket_directories = ''
max_connections = 200
shared_buffers = 256MB
EOF
}

pg_start() {
  pg_running && { log "postgres: running (port $PG_PORT)"; return 0; }
  rm -f "$DATA/postmaster.pid"
  log "postgres: starting on $HOST:$PG_PORT ($PG_BIN)"
  # Its own session and process group, so the bench can sum its CPU (backends included).
  local logf="$LOGS/postgres.log" opts=()
  # Each service of each Temporal node has pools of its own (up to maxConns per store: 4 x 20 + 3 x 10 a
  # node); past one node that is more than the 200 of postgresql.conf.
  if ((NODES > 1)); then opts=(-c "max_connections=$((110 * NODES + 20))"); fi
  touch "$logf"
  if [[ "$(id -u)" == 0 ]]; then chown postgres:postgres "$logf"; fi
  if [[ "$(id -u)" == 0 ]]; then
    setsid setpriv --reuid=postgres --regid=postgres --init-groups -- \
      "$PG_BIN/postgres" -D "$DATA" -p "$PG_PORT" "${opts[@]}" </dev/null >>"$logf" 2>&1 &
  else
    setsid "$PG_BIN/postgres" -D "$DATA" -p "$PG_PORT" "${opts[@]}" </dev/null >>"$logf" 2>&1 &
  fi
  echo $! >"$RUN/postgres.pid"
  local i
  for ((i = 0; i < 60; i++)); do
    if "$PG_BIN/pg_isready" -h "$HOST" -p "$PG_PORT" -q; then return 0; fi
    kill -0 "$(cat "$RUN/postgres.pid")" 2>/dev/null || { tail -20 "$logf" >&2; die "postgres exited (log $logf)"; }
    sleep 0.5
  done
  die "postgres not ready after 30 s (log $logf)"
}

sql_tool() {
  local db="$1"; shift
  SQL_PASSWORD="$(pg_password)" "$BIN_DIR/temporal-sql-tool" --plugin postgres12 --ep "$HOST" -p "$PG_PORT" \
    -u "$DB_USER" --db "$db" "$@"
}

psql_in() {
  local db="$1"; shift
  PGPASSWORD="$(pg_password)" "$PG_BIN/psql" -h "$HOST" -p "$PG_PORT" -U "$DB_USER" -d "$db" -tAq "$@"
}

# Create each database and its schema from the module's files; update-schema
# is a no-op at the latest version, so a later release's build only adds steps.
pg_schema() {
  local db dir
  for db in temporal temporal_visibility; do
    case "$db" in temporal) dir=temporal ;; *) dir=visibility ;; esac
    if [[ -z "$(psql_in postgres -c "SELECT 1 FROM pg_database WHERE datname = '$db'")" ]]; then
      sql_tool "$db" create-database >>"$LOGS/schema.log" 2>&1 || die "create-database $db failed: see $LOGS/schema.log"
    fi
    if [[ -z "$(psql_in "$db" -c "SELECT 1 FROM pg_tables WHERE tablename = 'schema_version'")" ]]; then
      sql_tool "$db" setup-schema -v 0.0 >>"$LOGS/schema.log" 2>&1 || die "setup-schema $db failed: see $LOGS/schema.log"
    fi
    sql_tool "$db" update-schema -d "$BIN_DIR/schema/postgresql/v12/$dir/versioned" >>"$LOGS/schema.log" 2>&1 \
      || die "update-schema $db failed: see $LOGS/schema.log"
  done
  log "schema: temporal $(psql_in temporal -c 'SELECT curr_version FROM schema_version'), visibility $(psql_in temporal_visibility -c 'SELECT curr_version FROM schema_version')"
}
