#!/usr/bin/env bash
# Run the metalflow local stack on 127.0.0.1: Temporal dev server, OpenStack
# Ironic (single process, SQLite, noauth) and sushy-tools' Redfish emulator
# (fake systems). Each service is a background process with a pid file and a
# log file under the state dir. See scripts/README-stack.md.
#
# Usage: scripts/stack.sh start   [temporal|ironic|sushy ...]
#        scripts/stack.sh stop    [temporal|ironic|sushy ...]
#        scripts/stack.sh restart [temporal|ironic|sushy ...] [--empty-db]
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
#   METALFLOW_VENV       <repo>/.venv
#   TEMPORAL_SQLITE_PRAGMAS  "journal_mode=wal synchronous=normal"  pragmas
#                        for the dev server's SQLite file (empty: SQLite's own)
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
SEARCH_ATTRIBUTES_FILE="$REPO/scripts/search-attributes.txt"
HOST=127.0.0.1
SERVICES=(temporal sushy ironic)   # start order; stop runs in reverse
IRONIC_API_VERSION="1.115"          # max microversion of Ironic 39.0.0

log() { printf '[stack] %s\n' "$*"; }
err() { printf '[stack] ERROR: %s\n' "$*" >&2; }
die() { err "$*"; exit 1; }
SCRIPT=scripts/stack.sh
# shellcheck source=scripts/lib/services.sh
source "$REPO/scripts/lib/services.sh"
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
for v in TEMPORAL_PORT TEMPORAL_UI_PORT IRONIC_PORT SUSHY_PORT HEALTH_TIMEOUT; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || die "$v must be a number, got '${!v}'"
done
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

if [[ $(printf '%s\n' "$TEMPORAL_PORT" "$TEMPORAL_UI_PORT" "$IRONIC_PORT" "$SUSHY_PORT" | sort -u | wc -l) -ne 4 ]]; then
  die "TEMPORAL_PORT, TEMPORAL_UI_PORT, IRONIC_PORT and SUSHY_PORT must differ ($TEMPORAL_PORT $TEMPORAL_UI_PORT $IRONIC_PORT $SUSHY_PORT)"
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
  esac
}

# Is 127.0.0.1:PORT free to listen on? (same SO_REUSEADDR semantics as servers)
port_free() {
  "$VENV/bin/python" - "$1" <<'EOF'
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
finally:
    s.close()
EOF
}

require_bin() {
  [[ -x "$1" ]] || die "$2: $1 not found; run scripts/install.sh"
}

# HTTP GET check. Args: url [user:pass] check; check is a python expression
# over `status` (int) and `body` (str); exit 0 when it is true.
http_check() {
  "$VENV/bin/python" - "$@" <<'EOF' 2>/dev/null
import base64, json, ssl, sys, urllib.request, urllib.error
url, auth, check = sys.argv[1], sys.argv[2], sys.argv[3]
req = urllib.request.Request(url, headers={"X-OpenStack-Ironic-API-Version": "1.1"})
if auth:
    req.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
# Health only: the stack's own HTTPS services may use a CA this python does not know.
context = ssl._create_unverified_context() if url.startswith("https:") else None
try:
    with urllib.request.urlopen(req, timeout=5, context=context) as r:
        status, body = r.status, r.read().decode()
except urllib.error.HTTPError as e:
    status, body = e.code, e.read().decode()
except Exception:
    sys.exit(1)
sys.exit(0 if eval(check, {"json": json}, {"status": status, "body": body}) else 1)
EOF
}

# `env -u` arguments dropping TEMPORAL_* variables of the caller (e.g. from
# `stack.sh env` or a CLI profile): our flags say everything.
temporal_env_unset() {
  local v
  for v in $(compgen -e | grep '^TEMPORAL_' || true); do printf '%s\n' -u "$v"; done
}

temporal_cli() {
  local unset_args=(); mapfile -t unset_args < <(temporal_env_unset)
  env "${unset_args[@]}" "$VENV/bin/temporal" "$@"
}

healthy() {
  local svc="$1" port scheme
  port="$(cat "$RUN/$svc.port" 2>/dev/null || port_of "$svc")"
  scheme="$(cat "$RUN/$svc.scheme" 2>/dev/null || scheme_of "$svc")"
  case "$svc" in
    temporal)
      temporal_cli operator cluster health --address "$HOST:$port" >/dev/null 2>&1 &&
        temporal_cli operator namespace describe --address "$HOST:$port" --namespace default >/dev/null 2>&1 ;;
    ironic)
      http_check "$scheme://$HOST:$port/v1/drivers" "" \
        "status == 200 and {'fake-hardware', 'redfish'} <= {d['name'] for d in json.loads(body)['drivers']}" ;;
    sushy)
      http_check "$scheme://$HOST:$port/redfish/v1/Systems" "$SUSHY_USERNAME:$SUSHY_PASSWORD" \
        "status == 200 and json.loads(body)['Members@odata.count'] > 0" ;;
  esac
}

# Early, unrecoverable failures visible in the log (fail fast instead of
# waiting for the health timeout).
fatal_in_log() {
  local svc="$1" since="$2"
  case "$svc" in
    ironic) tail -c +"$since" "$LOGS/ironic.log" 2>/dev/null | grep -qE 'Child [0-9]+ exited with status [1-9]|CRITICAL ironic' ;;
    *) return 1 ;;
  esac
}

# ------------------------------------------------------------ configs ----
prepare_temporal() { :; }

search_attribute_args() {
  [[ -f "$SEARCH_ATTRIBUTES_FILE" ]] || die "temporal: missing $SEARCH_ATTRIBUTES_FILE"
  local line
  while IFS= read -r line || [[ -n "$line" ]]; do
    line="${line%%#*}"; line="${line//[[:space:]]/}"
    [[ -n "$line" ]] || continue
    [[ "$line" =~ ^[A-Za-z_][A-Za-z0-9_]*=(Text|Keyword|Int|Double|Bool|Datetime|KeywordList)$ ]] \
      || die "temporal: bad line '$line' in $SEARCH_ATTRIBUTES_FILE (want NAME=Type)"
    printf '%s\n' --search-attribute "$line"
  done <"$SEARCH_ATTRIBUTES_FILE"
}

# `start-dev --search-attribute` registers attributes only when it creates the
# database; with an existing temporal.db new lines of search-attributes.txt
# are silently ignored. Register missing ones and refuse type changes.
ensure_search_attributes() {
  local port="$1" listing missing line name type want have
  listing="$(temporal_cli operator search-attribute list --address "$HOST:$port" --namespace default -o json)" \
    || die "temporal: could not list search attributes"
  missing=()
  while IFS= read -r line; do
    [[ "$line" == --search-attribute ]] && continue
    name="${line%%=*}"; type="${line#*=}"
    want="$(printf '%s' "$type" | sed -E 's/([a-z])([A-Z])/\1_\2/g' | tr '[:lower:]' '[:upper:]')"
    have="$("$VENV/bin/python" -c 'import json,sys; print(json.loads(sys.argv[1]).get("customAttributes", {}).get(sys.argv[2], ""))' "$listing" "$name")"
    if [[ -z "$have" ]]; then
      missing+=("$name=$type")
    elif [[ "$have" != "INDEXED_VALUE_TYPE_$want" ]]; then
      die "temporal: search attribute $name is registered as ${have#INDEXED_VALUE_TYPE_} in $STATE/temporal.db but $SEARCH_ATTRIBUTES_FILE says $type; types cannot change (stop the stack and delete $STATE/temporal.db to start over)"
    fi
  done < <(search_attribute_args)
  for line in "${missing[@]}"; do
    log "temporal: registering search attribute $line (not in the existing database)"
    temporal_cli operator search-attribute create --address "$HOST:$port" --namespace default \
      --name "${line%%=*}" --type "${line#*=}" >/dev/null || die "temporal: could not register search attribute $line"
  done
}

prepare_ironic() {
  local d="$STATE/ironic"
  mkdir -p "$d/locks" "$d/tmp" "$d/httpboot" "$d/tftpboot"
  cat >"$d/ironic.conf" <<EOF
# Generated by scripts/stack.sh on every start; edit the script, not this file.
[DEFAULT]
auth_strategy = noauth
rpc_transport = none
host = metalflow-ironic
state_path = $d
tempdir = $d/tmp
log_file = $LOGS/ironic.log
debug = false
# The hardware types Metal3's ironic-image enables for the BMC schemes BMO
# knows (ipmi://, redfish*://, idrac*://, ilo5-redfish:// which is redfish),
# with the interfaces BMO asks for per scheme (types/bmc-types.ts), plus
# fake-hardware for the tests. Defaults are listed first where the order
# picks one (Ironic takes the hardware type's first enabled one when a
# node names none: ipxe for ipmi, redfish-virtual-media for redfish).
enabled_hardware_types = fake-hardware,redfish,ipmi,idrac
enabled_bios_interfaces = fake,no-bios,redfish,idrac-redfish
enabled_boot_interfaces = fake,ipxe,pxe,redfish-virtual-media,redfish-https,idrac-redfish-virtual-media
enabled_console_interfaces = fake,no-console
enabled_deploy_interfaces = fake,direct,ramdisk,custom-agent
enabled_firmware_interfaces = fake,no-firmware,redfish
enabled_inspect_interfaces = fake,no-inspect,redfish,agent,idrac-redfish
enabled_management_interfaces = fake,redfish,noop,ipmitool,idrac-redfish
enabled_network_interfaces = noop
default_network_interface = noop
enabled_power_interfaces = fake,redfish,ipmitool,idrac-redfish
enabled_raid_interfaces = fake,no-raid,redfish,agent,idrac-redfish
enabled_rescue_interfaces = fake,no-rescue
enabled_storage_interfaces = fake,noop
enabled_vendor_interfaces = fake,no-vendor,redfish,ipmitool,idrac-redfish

[api]
host_ip = $HOST
port = $IRONIC_PORT
$(if [[ -n "$IRONIC_CERT_FILE" ]]; then printf 'enable_ssl_api = true\ncert_file = %s\nkey_file = %s\n' "$IRONIC_CERT_FILE" "$IRONIC_KEY_FILE"; fi)

[conductor]
automated_clean = true
# Ironic's record of a node's power follows the BMC within 30 s instead of
# 60, so a power change made behind its back shows in the host's next power
# check sooner (the demo and the power tests). Each sync visits every node,
# so with a large fleet it costs Ironic CPU: raise it there.
sync_power_state_interval = 30
# Record what the BMC reports instead of forcing Ironic's state back: whether
# to power a host on again is the host workflow's decision.
force_power_state_during_sync = false
check_provision_state_interval = 15
deploy_callback_timeout = 600
clean_callback_timeout = 600
inspect_wait_timeout = 600
rescue_callback_timeout = 600
service_callback_timeout = 600
power_state_change_timeout = 60
graceful_shutdown_timeout = 15

[database]
connection = sqlite:///$d/ironic.sqlite

[deploy]
http_root = $d/httpboot

[pxe]
tftp_root = $d/tftpboot

[dhcp]
dhcp_provider = none

# Where an agent would call back: a deploy or inspection with the agent interfaces
# (the cancellation tests use them) then waits for a ramdisk that never comes,
# as a real stuck deploy does, instead of failing at once on a missing URL.
[service_catalog]
endpoint_override = $(scheme_of ironic)://$HOST:$IRONIC_PORT

[redfish]
connection_attempts = 3
connection_retry_interval = 2
connect_timeout = 10

# Ironic waits this long between two ipmitool commands to one BMC (default
# 5 s, for slow real BMCs); ipmi_sim on loopback answers at once, and a power
# change is several commands.
[ipmi]
min_command_interval = 1

[oslo_concurrency]
lock_path = $d/locks
EOF
  local dbsync=("$VENV/bin/ironic-dbsync" --config-file "$d/ironic.conf")
  if [[ ! -s "$d/ironic.sqlite" ]]; then
    log "ironic: creating database schema ($d/ironic.sqlite)"
    "${dbsync[@]}" create_schema >>"$LOGS/ironic.log" 2>&1 || { log_tail ironic 20; die "ironic: ironic-dbsync create_schema failed"; }
  else
    "${dbsync[@]}" upgrade >>"$LOGS/ironic.log" 2>&1 || { log_tail ironic 20; die "ironic: ironic-dbsync upgrade failed"; }
  fi
}

prepare_sushy() {
  local d="$STATE/sushy"
  mkdir -p "$d/state"
  [[ -f "$SUSHY_SYSTEMS_FILE" ]] || die "sushy: systems file $SUSHY_SYSTEMS_FILE not found"
  # bcrypt cost 4 (the minimum): the emulator checks the hash on every request.
  "$VENV/bin/python" - "$d/htpasswd" "$SUSHY_USERNAME" "$SUSHY_PASSWORD" <<'EOF' || die "sushy: could not write htpasswd (bcrypt missing? run scripts/install.sh)"
import bcrypt, sys
path, user, password = sys.argv[1:4]
try:
    line = open(path).read().strip()
    if line.startswith(user + ":") and bcrypt.checkpw(password.encode(), line.split(":", 1)[1].encode()):
        sys.exit(0)
except (OSError, ValueError):
    pass
with open(path, "w") as f:
    f.write(f"{user}:{bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4)).decode()}\n")
EOF
  cat >"$d/sushy.conf" <<EOF
# Generated by scripts/stack.sh on every start (Flask config, Python syntax).
import json as _json
SUSHY_EMULATOR_LISTEN_IP = '$HOST'
SUSHY_EMULATOR_LISTEN_PORT = $SUSHY_PORT
SUSHY_EMULATOR_FAKE_DRIVER = True
SUSHY_EMULATOR_FEATURE_SET = 'full'
SUSHY_EMULATOR_AUTH_FILE = '$d/htpasswd'
# Power/boot/vmedia state of the fake systems; default would be shared /tmp.
SUSHY_EMULATOR_STATE_DIR = '$d/state'
SUSHY_EMULATOR_FAKE_POWER_DELAY = (${SUSHY_POWER_DELAY%-*}, ${SUSHY_POWER_DELAY#*-})
$(if [[ -n "$SUSHY_SSL_CERT" ]]; then printf "SUSHY_EMULATOR_SSL_CERT = '%s'\nSUSHY_EMULATOR_SSL_KEY = '%s'\n" "$SUSHY_SSL_CERT" "$SUSHY_SSL_KEY"; fi)
with open('$SUSHY_SYSTEMS_FILE') as _f:
    SUSHY_EMULATOR_FAKE_SYSTEMS = _json.load(_f)
EOF
}

command_of() {
  case "$1" in
    temporal)
      local sa=() unset_args=() pragmas=() p
      mapfile -t sa < <(search_attribute_args)
      # WAL with synchronous=normal survives a killed server (only an OS crash
      # can lose the last commits) and spares an fsync per history write, which
      # is most of the dev server's cost at fleet scale.
      for p in ${TEMPORAL_SQLITE_PRAGMAS-journal_mode=wal synchronous=normal}; do pragmas+=(--sqlite-pragma "$p"); done
      # An operation's first activity goes back with the workflow task's reply
      # to the worker that completed it, skipping a round through matching.
      pragmas+=(--dynamic-config-value system.enableActivityEagerExecution=true)
      mapfile -t unset_args < <(temporal_env_unset)
      CMD=(env "${unset_args[@]}" "$VENV/bin/temporal" server start-dev
        --db-filename "$STATE/temporal.db" --ip "$HOST"
        --port "$TEMPORAL_PORT" --ui-port "$TEMPORAL_UI_PORT"
        --namespace default --log-level warn "${sa[@]}" "${pragmas[@]}") ;;
    ironic)
      CMD=("$VENV/bin/ironic" --config-file "$STATE/ironic/ironic.conf") ;;
    sushy)
      CMD=("$VENV/bin/python" "$REPO/scripts/sushy_emulator.py" --config "$STATE/sushy/sushy.conf") ;;
  esac
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

wait_healthy() {
  local svc="$1" pid="$2" since="$3" deadline=$((SECONDS + HEALTH_TIMEOUT))
  while ((SECONDS < deadline)); do
    if healthy "$svc"; then return 0; fi
    if ! kill -0 "$pid" 2>/dev/null || [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || echo Z)" == Z ]]; then
      log_tail "$svc"; die "$svc: process $pid exited during startup"
    fi
    if fatal_in_log "$svc" "$since"; then
      log_tail "$svc"; stop_one "$svc" >/dev/null; die "$svc: failed to start (see log above)"
    fi
    sleep 0.5
  done
  log_tail "$svc"
  die "$svc: not healthy after ${HEALTH_TIMEOUT}s (pid $pid still running; log $LOGS/$svc.log)"
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
    select_services "$@"; lock
    [[ -x "$VENV/bin/python" ]] || die "python venv $VENV not found; run scripts/install.sh"
    # Check every service that is not running before starting any of them.
    for s in "${SELECTED[@]}"; do
      if [[ -z "$(running_pid "$s")" ]]; then precheck_one "$s"; fi
    done
    for s in "${SERVICES[@]}"; do
      if selected "$s"; then start_one "$s"; fi
    done
    log "all requested services healthy (state dir $STATE)" ;;
  stop)
    select_services "$@"; lock
    stop_selected ;;
  restart)
    empty_db=0; names=()
    for a in "$@"; do
      if [[ "$a" == --empty-db ]]; then empty_db=1; else names+=("$a"); fi
    done
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
    [[ $# -eq 1 ]] || die "usage: stack.sh logs temporal|ironic|sushy"
    select_services "$1"; echo "$LOGS/$1.log" ;;
  ""|-h|--help|help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}" ;;
  *) die "unknown command '$cmd' (start|stop|restart|status|env|logs)" ;;
esac
