#!/usr/bin/env bash
# Run the metalflow local stack on 127.0.0.1: Temporal dev server, OpenStack
# Ironic (single process, SQLite, noauth) and sushy-tools' Redfish emulator
# (fake systems). Each service is a background process with a pid file and a
# log file under the state dir. See scripts/README-stack.md.
#
# Usage: scripts/stack.sh start   [temporal|ironic|sushy|httpboot ...] [--empty-db]
#                       --empty-db: an Ironic that is not running starts with
#                       an EMPTY database (a running one is left as it is);
#                       the test stack's start, so that a local run begins as
#                       CI's does, without the nodes of earlier runs
#        scripts/stack.sh stop    [temporal|ironic|sushy|httpboot ...]
#        scripts/stack.sh restart [temporal|ironic|sushy|httpboot ...] [--empty-db]
#                       --empty-db: Ironic comes back with an EMPTY database
#                       (its SQLite file is deleted while it is stopped), as a
#                       Metal3 Ironic pod does on restart (ephemeral SQLite);
#                       only with ironic among the services (or none named)
#        scripts/stack.sh status        (exit 0 only when all are running and healthy)
#        scripts/stack.sh env           (prints `export NAME=value` lines, and `unset`s
#                                        the TLS client settings the plain services do not use)
#        scripts/stack.sh logs SERVICE  (path of the service's log file)
#
# Environment (defaults):
#   METALFLOW_STATE_DIR  <repo>/.state/stack   state: dbs, configs, pids, logs
#   TEMPORAL_PORT        7233                  Temporal frontend gRPC
#   TEMPORAL_UI_PORT     8233                  Temporal Web UI
#   IRONIC_PORT          6385                  Ironic API
#   SUSHY_PORT           8000                  sushy-emulator (Redfish)
#   SUSHY_USERNAME / SUSHY_PASSWORD  admin / password   Redfish basic auth
#   SUSHY_SYSTEMS_FILE   scripts/sushy-fake-systems.json
#   SUSHY_POWER_DELAY    1-11     seconds (MIN-MAX, random) before a Redfish
#                                 power change lands on a fake system
#   METALFLOW_HEALTH_TIMEOUT  60               seconds to wait for health
#   IRONIC_SYNC_POWER_STATE_INTERVAL  30       seconds between Ironic's power
#                        syncs; each visits every node (raise it for large fleets)
#   IRONIC_NODE_HISTORY  true   Ironic's [conductor] node_history (false: as
#                        Metal3's ironic-image sets it)
#   IRONIC_CALLBACK_TIMEOUT  600  seconds Ironic waits for an agent to call
#                        back during a deploy or a clean ([conductor]
#                        deploy_callback_timeout, clean_callback_timeout)
#   IRONIC_CHECK_PROVISION_STATE_INTERVAL  15  how often Ironic looks for
#                        such timeouts
#   IRONIC_AGENT_COMMAND_WAIT_INTERVAL  6  the agent path: seconds between
#                        Ironic's checks of an agent command it waits on
#                        ([agent] command_wait_interval)
#   IRONIC_AGENT_POWER_OFF_POLL_INTERVAL  5  the agent path: seconds between
#                        Ironic's power reads after the agent's soft power off
#                        ([agent] post_deploy_get_power_state_retry_interval;
#                        the retries keep a 30 s wait in all)
#   IRONIC_MEMO_SESSION_HASH  unset   1: Ironic computes the PBKDF2 hash its
#                        Redfish driver makes of a BMC password once per
#                        password and address instead of on every BMC call
#                        (scripts/ironic-site/sitecustomize.py; the test stacks,
#                        the benchmark's agent path)
#   IRONIC_SQLITE_POOL   unset   1: Ironic keeps a pool of SQLite connections
#                        instead of opening one per database session (oslo.db's
#                        NullPool); same settings and transactions on each
#                        (scripts/ironic-site/sitecustomize.py; the test stacks)
#   IRONIC_DB_TEMPLATE   unset   1: an empty Ironic database is a copy of the
#                        one ironic-dbsync create_schema made for this venv
#                        before (.state/ironic-db-templates; the test stacks)
#   METALFLOW_VENV       <repo>/.venv
#   TEMPORAL_SQLITE_PRAGMAS  "journal_mode=wal synchronous=normal"  pragmas
#                        for the dev server's SQLite file (empty: SQLite's own)
#   TEMPORAL_METRICS_PORT  unset  the dev server's Prometheus metrics port
#   TEMPORAL_TASKQUEUE_PARTITIONS  1  the dev server's partitions per task
#                        queue (matching.numTaskqueueRead/WritePartitions;
#                        Temporal's default 4)
#   IRONIC_HTTP_PORT     IRONIC_PORT-205 (6180, ironic-image's)  the port of
#                        the HTTP server for Ironic's http_root ([deploy] http_url:
#                        boot ISOs, iPXE scripts, live ISOs over virtual media);
#                        the `httpboot` service serves it
#   IRONIC_AGENT_PATH    unset    1: the agent path (docs/agent-path.md): Ironic
#                        gets ironic-image's agent settings, and http_root is
#                        served by the agent launcher on IRONIC_HTTP_PORT
#                        instead (start `sushy ironic` only), or by httpboot
#                        with a launcher that only boots agents (the demo)
#                        (IRONIC_FAST_TRACK: false unless set)
#   SUSHY_EXTERNAL_NOTIFICATION_URL  unset   where sushy PUTs the state of
#                        systems with external_notifier (the agent launcher)
#   IRONIC_CERT_FILE / IRONIC_KEY_FILE   unset   Ironic's API over HTTPS
#                        ([api] enable_ssl_api, as ironic-image names them)
#   SUSHY_EMULATOR_SSL_CERT / SUSHY_EMULATOR_SSL_KEY   unset   sushy over HTTPS
#                        (sushy-tools' own setting names)
# Pick ports below 32768: temporal start-dev also binds a few random ports in
# the kernel's ephemeral range.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${METALFLOW_VENV:-$REPO/.venv}"
STATE="${METALFLOW_STATE_DIR:-$REPO/.state/stack}"
TEMPORAL_PORT="${TEMPORAL_PORT:-7233}"
TEMPORAL_UI_PORT="${TEMPORAL_UI_PORT:-8233}"
IRONIC_PORT="${IRONIC_PORT:-6385}"
SUSHY_PORT="${SUSHY_PORT:-8000}"
SUSHY_USERNAME="${SUSHY_USERNAME:-admin}"
SUSHY_PASSWORD="${SUSHY_PASSWORD:-password}"
SUSHY_SYSTEMS_FILE="${SUSHY_SYSTEMS_FILE:-$REPO/scripts/sushy-fake-systems.json}"
SUSHY_POWER_DELAY="${SUSHY_POWER_DELAY:-1-11}"
HEALTH_TIMEOUT="${METALFLOW_HEALTH_TIMEOUT:-60}"
IRONIC_SYNC_POWER_STATE_INTERVAL="${IRONIC_SYNC_POWER_STATE_INTERVAL:-30}"
IRONIC_CALLBACK_TIMEOUT="${IRONIC_CALLBACK_TIMEOUT:-600}"
IRONIC_NODE_HISTORY="${IRONIC_NODE_HISTORY:-true}"
IRONIC_CHECK_PROVISION_STATE_INTERVAL="${IRONIC_CHECK_PROVISION_STATE_INTERVAL:-15}"
IRONIC_AGENT_COMMAND_WAIT_INTERVAL="${IRONIC_AGENT_COMMAND_WAIT_INTERVAL:-6}"
IRONIC_AGENT_POWER_OFF_POLL_INTERVAL="${IRONIC_AGENT_POWER_OFF_POLL_INTERVAL:-5}"
SEARCH_ATTRIBUTES_FILE="$REPO/scripts/search-attributes.txt"
HOST=127.0.0.1
SERVICES=(temporal sushy httpboot ironic)   # start order; stop runs in reverse
IRONIC_API_VERSION="1.115"          # max microversion of Ironic 39.0.0

log() { printf '[stack] %s\n' "$*"; }
err() { printf '[stack] ERROR: %s\n' "$*" >&2; }
die() { err "$*"; exit 1; }
SCRIPT=scripts/stack.sh
# shellcheck source=scripts/lib/services.sh
source "$REPO/scripts/lib/services.sh"
# shellcheck source=scripts/lib/stack-health.sh
source "$REPO/scripts/lib/stack-health.sh"
# shellcheck source=scripts/lib/stack-config.sh
source "$REPO/scripts/lib/stack-config.sh"
# Beside the pid and port files: how the service was started.
run_files() {
  echo "$1.scheme"
  if [[ "$1" == temporal ]]; then echo temporal.uiport; fi
}

IRONIC_CERT_FILE="${IRONIC_CERT_FILE:-}"
IRONIC_KEY_FILE="${IRONIC_KEY_FILE:-}"
SUSHY_SSL_CERT="${SUSHY_EMULATOR_SSL_CERT:-}"
SUSHY_SSL_KEY="${SUSHY_EMULATOR_SSL_KEY:-}"

[[ "$SUSHY_POWER_DELAY" =~ ^([0-9]+(\.[0-9]+)?)-([0-9]+(\.[0-9]+)?)$ ]] \
  || die "SUSHY_POWER_DELAY must be MIN-MAX seconds (e.g. 1-11 or 0-0.5), got '$SUSHY_POWER_DELAY'"
for v in TEMPORAL_PORT TEMPORAL_UI_PORT IRONIC_PORT SUSHY_PORT HEALTH_TIMEOUT IRONIC_SYNC_POWER_STATE_INTERVAL IRONIC_CALLBACK_TIMEOUT IRONIC_CHECK_PROVISION_STATE_INTERVAL IRONIC_AGENT_COMMAND_WAIT_INTERVAL IRONIC_AGENT_POWER_OFF_POLL_INTERVAL; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || die "$v must be a number, got '${!v}'"
done
[[ "$IRONIC_NODE_HISTORY" == true || "$IRONIC_NODE_HISTORY" == false ]] || die "IRONIC_NODE_HISTORY must be true or false, got '$IRONIC_NODE_HISTORY'"
((IRONIC_AGENT_COMMAND_WAIT_INTERVAL > 0 && IRONIC_AGENT_POWER_OFF_POLL_INTERVAL > 0)) || die "IRONIC_AGENT_COMMAND_WAIT_INTERVAL and IRONIC_AGENT_POWER_OFF_POLL_INTERVAL must be at least 1"
# Beside Ironic's API port as in Metal3's ironic-image (6385 and 6180), so every port scheme that
# moves IRONIC_PORT (the test stack's, a worktree's) moves this one with it.
IRONIC_HTTP_PORT="${IRONIC_HTTP_PORT:-$((IRONIC_PORT - 205))}"
[[ "$IRONIC_HTTP_PORT" =~ ^[0-9]+$ ]] || die "IRONIC_HTTP_PORT must be a number, got '$IRONIC_HTTP_PORT'"
# A certificate and its key: both or neither, and both readable files.
tls_pair() {
  local what="$1" cert_var="$2" key_var="$3" cert="$4" key="$5" f
  if [[ -n "$cert" && -z "$key" ]]; then die "$what: $cert_var is set but $key_var is not"; fi
  if [[ -z "$cert" && -n "$key" ]]; then die "$what: $key_var is set but $cert_var is not"; fi
  for f in "$cert" "$key"; do
    if [[ -n "$f" && ! -r "$f" ]]; then die "$what: cannot read $f"; fi
  done
  return 0
}
tls_pair ironic IRONIC_CERT_FILE IRONIC_KEY_FILE "$IRONIC_CERT_FILE" "$IRONIC_KEY_FILE"
tls_pair sushy SUSHY_EMULATOR_SSL_CERT SUSHY_EMULATOR_SSL_KEY "$SUSHY_SSL_CERT" "$SUSHY_SSL_KEY"

if [[ $(printf '%s\n' "$TEMPORAL_PORT" "$TEMPORAL_UI_PORT" "$IRONIC_PORT" "$SUSHY_PORT" "$IRONIC_HTTP_PORT" | sort -u | wc -l) -ne 5 ]]; then
  die "TEMPORAL_PORT, TEMPORAL_UI_PORT, IRONIC_PORT, SUSHY_PORT and IRONIC_HTTP_PORT must differ ($TEMPORAL_PORT $TEMPORAL_UI_PORT $IRONIC_PORT $SUSHY_PORT $IRONIC_HTTP_PORT)"
fi

mkdir -p "$STATE"
STATE="$(cd "$STATE" && pwd)"
RUN="$STATE/run"
LOGS="$STATE/logs"
mkdir -p "$RUN" "$LOGS"

# http or https, as the service was started (recorded in run/<svc>.scheme).
scheme_of() {
  case "$1" in
    ironic) [[ -n "$IRONIC_CERT_FILE" ]] && echo https || echo http ;;
    sushy) [[ -n "$SUSHY_SSL_CERT" ]] && echo https || echo http ;;
    *) echo http ;;
  esac
}

port_of() {
  case "$1" in
    temporal) echo "$TEMPORAL_PORT" ;;
    ironic) echo "$IRONIC_PORT" ;;
    sushy) echo "$SUSHY_PORT" ;;
    httpboot) echo "$IRONIC_HTTP_PORT" ;;
  esac
}

# ------------------------------------------------------------ helpers ----
# A string unique to this state dir that the service's command line contains,
# used to tell our process from an unrelated one that reused the pid.
marker_of() {
  case "$1" in
    temporal) echo "$STATE/temporal.db" ;;
    ironic) echo "$STATE/ironic/ironic.conf" ;;
    sushy) echo "$STATE/sushy/sushy.conf" ;;
    httpboot) echo "$STATE/ironic/httpboot" ;;
  esac
}

require_bin() {
  [[ -x "$1" ]] || die "$2: $1 not found; run scripts/install.sh"
}

# ------------------------------------------------------------ actions ----
# Ironic must be stopped. Its next start creates the schema again (every node,
# port and allocation is gone), as when Metal3's Ironic pod restarts with its
# default ephemeral SQLite database.
empty_ironic_db() {
  [[ -z "$(running_pid ironic)" ]] || die "ironic: still running; cannot empty its database"
  local db="$STATE/ironic/ironic.sqlite"
  rm -f "$db" "$db-journal" "$db-wal" "$db-shm"
  log "ironic: database emptied ($db removed); nodes are gone"
}

# start/restart arguments: service names into `names`, --empty-db into `empty_db`.
split_empty_db() {
  empty_db=0; names=()
  local a
  for a in "$@"; do
    if [[ "$a" == --empty-db ]]; then empty_db=1; else names+=("$a"); fi
  done
}

# Binaries present and ports free for a service that is not running yet.
precheck_one() {
  case "$1" in
    temporal)
      require_bin "$VENV/bin/temporal" temporal
      require_port temporal "$TEMPORAL_PORT" "Temporal frontend gRPC" TEMPORAL_PORT
      require_port temporal "$TEMPORAL_UI_PORT" "Temporal Web UI" TEMPORAL_UI_PORT ;;
    ironic)
      require_bin "$VENV/bin/ironic" ironic
      require_bin "$VENV/bin/ironic-dbsync" ironic
      require_port ironic "$IRONIC_PORT" "Ironic API" IRONIC_PORT ;;
    sushy)
      require_bin "$VENV/bin/sushy-emulator" sushy
      require_port sushy "$SUSHY_PORT" "sushy-emulator Redfish" SUSHY_PORT ;;
    httpboot)
      require_port httpboot "$IRONIC_HTTP_PORT" "Ironic's http_root (HTTP)" IRONIC_HTTP_PORT ;;
  esac
}

start_one() {
  local svc="$1" pid port recorded
  port="$(port_of "$svc")"
  pid="$(running_pid "$svc")"
  if [[ -n "$pid" ]]; then
    recorded="$(cat "$RUN/$svc.port" 2>/dev/null || true)"
    if [[ -n "$recorded" && "$recorded" != "$port" ]]; then
      die "$svc: already running (pid $pid) on port $recorded, not $port; run 'scripts/stack.sh stop $svc' first"
    fi
    recorded="$(cat "$RUN/$svc.scheme" 2>/dev/null || echo http)"
    if [[ "$recorded" != "$(scheme_of "$svc")" ]]; then
      die "$svc: already running (pid $pid) over $recorded, not $(scheme_of "$svc"); run 'scripts/stack.sh stop $svc' first"
    fi
    if [[ "$svc" == temporal && -f "$RUN/temporal.uiport" && "$(cat "$RUN/temporal.uiport")" != "$TEMPORAL_UI_PORT" ]]; then
      die "temporal: already running (pid $pid) with UI port $(cat "$RUN/temporal.uiport"), not $TEMPORAL_UI_PORT; stop it first"
    fi
    if healthy "$svc"; then
      if [[ "$svc" == temporal ]]; then ensure_search_attributes "$port"; fi
      log "$svc: already running (pid $pid, port $port)"
      return 0
    fi
    log "$svc: running (pid $pid) but not healthy yet; waiting"
    wait_healthy "$svc" "$pid" "$(( $(stat -c %s "$LOGS/$svc.log" 2>/dev/null || echo 0) + 1 ))"
    if [[ "$svc" == temporal ]]; then ensure_search_attributes "$port"; fi
    log "$svc: healthy (pid $pid, port $port)"
    return 0
  fi

  precheck_one "$svc"
  "prepare_$svc"
  command_of "$svc"
  local logfile="$LOGS/$svc.log" since
  touch "$logfile"
  since=$(( $(stat -c %s "$logfile") + 1 ))
  printf '\n===== %s stack.sh start %s (port %s) =====\n' "$(date -Is)" "$svc" "$port" >>"$logfile"
  # setsid: own session and process group (no SIGHUP from the caller's
  # terminal; `stop` signals the whole group). stdin/stdout/stderr are
  # detached so callers capturing our output do not wait for the service.
  setsid "${CMD[@]}" </dev/null >>"$logfile" 2>&1 9>&- &
  pid=$!
  echo "$pid" >"$RUN/$svc.pid"
  echo "$port" >"$RUN/$svc.port"
  scheme_of "$svc" >"$RUN/$svc.scheme"
  if [[ "$svc" == temporal ]]; then echo "$TEMPORAL_UI_PORT" >"$RUN/temporal.uiport"; fi
  log "$svc: started pid $pid on $HOST:$port; waiting for health (max ${HEALTH_TIMEOUT}s)"
  wait_healthy "$svc" "$pid" "$since"
  if [[ "$svc" == temporal ]]; then ensure_search_attributes "$port"; fi
  log "$svc: healthy"
}

status_all() {
  local svc pid port rc=0 extra
  for svc in "${SERVICES[@]}"; do
    pid="$(running_pid "$svc" 2>/dev/null)"
    port="$(cat "$RUN/$svc.port" 2>/dev/null || port_of "$svc")"
    extra=""
    if [[ "$svc" == temporal ]]; then extra=" ui=http://$HOST:$(cat "$RUN/temporal.uiport" 2>/dev/null || echo "$TEMPORAL_UI_PORT")"; fi
    if [[ -z "$pid" ]]; then
      printf '%-9s stopped   port=%s\n' "$svc" "$port"; rc=1
    elif healthy "$svc"; then
      printf '%-9s running   pid=%s port=%s%s healthy\n' "$svc" "$pid" "$port" "$extra"
    else
      printf '%-9s running   pid=%s port=%s%s UNHEALTHY (log %s)\n' "$svc" "$pid" "$port" "$extra" "$LOGS/$svc.log"; rc=1
    fi
  done
  printf 'state dir: %s\n' "$STATE"
  return $rc
}

print_env() {
  cat <<EOF
export METALFLOW_STATE_DIR=$STATE
export TEMPORAL_ADDRESS=$HOST:$TEMPORAL_PORT
export TEMPORAL_NAMESPACE=default
export TEMPORAL_UI_URL=http://$HOST:$TEMPORAL_UI_PORT
export IRONIC_URL=$(scheme_of ironic)://$HOST:$IRONIC_PORT
export IRONIC_API_VERSION=$IRONIC_API_VERSION
export SUSHY_URL=$(scheme_of sushy)://$HOST:$SUSHY_PORT
export IRONIC_HTTP_URL=http://$HOST:$IRONIC_HTTP_PORT
export SUSHY_USERNAME=$SUSHY_USERNAME
export SUSHY_PASSWORD=$SUSHY_PASSWORD
EOF
  # The dev server speaks plain gRPC: TLS settings meant for another Temporal (or a plain Ironic) would break the demo's processes.
  echo "unset TEMPORAL_TLS TEMPORAL_TLS_SERVER_CA_CERT_PATH TEMPORAL_TLS_CLIENT_CERT_PATH TEMPORAL_TLS_CLIENT_KEY_PATH TEMPORAL_TLS_SERVER_NAME TEMPORAL_API_KEY"
  if [[ "$(scheme_of ironic)" == http ]]; then echo "unset IRONIC_CACERT_FILE IRONIC_CLIENT_CERT_FILE IRONIC_CLIENT_PRIVATE_KEY_FILE"; fi
}

cmd="${1:-}"; shift || true
case "$cmd" in
  start)
    split_empty_db "$@"
    select_services "${names[@]}"; lock
    [[ -x "$VENV/bin/python" ]] || die "python venv $VENV not found; run scripts/install.sh"
    # Check every service that is not running before starting any of them.
    for s in "${SELECTED[@]}"; do
      if [[ -z "$(running_pid "$s")" ]]; then precheck_one "$s"; fi
    done
    if ((empty_db)) && selected ironic && [[ -z "$(running_pid ironic)" ]]; then empty_ironic_db; fi
    for s in "${SERVICES[@]}"; do
      if selected "$s"; then start_one "$s"; fi
    done
    log "all requested services healthy (state dir $STATE)" ;;
  stop)
    select_services "$@"; lock
    stop_selected ;;
  restart)
    split_empty_db "$@"
    select_services "${names[@]}"; lock
    [[ -x "$VENV/bin/python" ]] || die "python venv $VENV not found; run scripts/install.sh"
    if ((empty_db)) && ! selected ironic; then
      die "--empty-db empties Ironic's database: name ironic among the services (restart ironic --empty-db)"
    fi
    stop_selected
    if ((empty_db)); then empty_ironic_db; fi
    for s in "${SERVICES[@]}"; do
      if selected "$s"; then start_one "$s"; fi
    done ;;
  status) status_all ;;
  env) print_env ;;
  logs)
    [[ $# -eq 1 ]] || die "usage: stack.sh logs temporal|ironic|sushy|httpboot"
    select_services "$1"; echo "$LOGS/$1.log" ;;
  ""|-h|--help|help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}" ;;
  *) die "unknown command '$cmd' (start|stop|restart|status|env|logs)" ;;
esac
