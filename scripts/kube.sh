#!/usr/bin/env bash
# Run a real Kubernetes API server on 127.0.0.1 for metalflow's Kubernetes mode
# (tests and demo): etcd plus kube-apiserver, no kubelet, scheduler or
# controller-manager. Binaries come from scripts/kube-build.sh (built once per
# machine into .cache/kube). Each service is a background process with a pid
# file and a log under the state dir; same conventions as scripts/stack.sh.
#
# Usage: scripts/kube.sh start   [etcd|apiserver ...]
#        scripts/kube.sh stop    [etcd|apiserver ...]
#        scripts/kube.sh restart [etcd|apiserver ...]
#        scripts/kube.sh status        (exit 0 only when both run and are healthy)
#        scripts/kube.sh env           (prints `export NAME=value` lines: KUBECONFIG, PATH with kubectl, ...)
#        scripts/kube.sh logs SERVICE  (path of the service's log file)
#        scripts/kube.sh kubectl ARGS  (runs the built kubectl with the admin kubeconfig)
#        scripts/kube.sh clean         (stops both and deletes the state dir: etcd data, keys, kubeconfig)
#
# Environment (defaults):
#   METALFLOW_KUBE_STATE_DIR  <repo>/.state/kube   etcd data, keys and certs, kubeconfig, pids, logs
#   ETCD_PORT                 23379                etcd client URL port
#   ETCD_PEER_PORT            23380                etcd peer URL port
#   KUBE_API_PORT             23443                kube-apiserver HTTPS port
#   KUBE_SERVICE_CIDR         10.96.0.0/12         --service-cluster-ip-range
#   METALFLOW_KUBE_HEALTH_TIMEOUT  120             seconds to wait for etcd /health and apiserver /readyz
#   METALFLOW_KUBE_CACHE      <repo>/.cache/kube   where scripts/kube-build.sh put the binaries
#
# What start generates once under <state>/pki (openssl): a CA; the apiserver's
# serving certificate for 127.0.0.1 and localhost signed by it; an admin client
# certificate (CN=metalflow-admin, O=system:masters) for --client-ca-file; the
# service-account signing key pair. <state>/kubeconfig embeds the CA and the
# admin certificate, so it works with kubectl and @kubernetes/client-node.
# Authorization is RBAC (system:masters bypasses it; use
# `kubectl --as=system:serviceaccount:NS:NAME` or `kubectl create token` to
# exercise RBAC manifests). Without a controller-manager, deleted namespaces
# stay Terminating and nothing garbage-collects: use fresh namespaces.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${METALFLOW_KUBE_STATE_DIR:-$REPO/.state/kube}"
ETCD_PORT="${ETCD_PORT:-23379}"
ETCD_PEER_PORT="${ETCD_PEER_PORT:-23380}"
KUBE_API_PORT="${KUBE_API_PORT:-23443}"
KUBE_SERVICE_CIDR="${KUBE_SERVICE_CIDR:-10.96.0.0/12}"
HEALTH_TIMEOUT="${METALFLOW_KUBE_HEALTH_TIMEOUT:-120}"
HOST=127.0.0.1
SERVICES=(etcd apiserver)   # start order; stop runs in reverse
SA_ISSUER="https://kubernetes.default.svc.cluster.local"

log() { printf '[kube] %s\n' "$*"; }
err() { printf '[kube] ERROR: %s\n' "$*" >&2; }
die() { err "$*"; exit 1; }
SCRIPT=scripts/kube.sh
# shellcheck source=scripts/lib/services.sh
source "$REPO/scripts/lib/services.sh"

for v in ETCD_PORT ETCD_PEER_PORT KUBE_API_PORT HEALTH_TIMEOUT; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || die "$v must be a number, got '${!v}'"
done
if [[ $(printf '%s\n' "$ETCD_PORT" "$ETCD_PEER_PORT" "$KUBE_API_PORT" | sort -u | wc -l) -ne 3 ]]; then
  die "ETCD_PORT, ETCD_PEER_PORT and KUBE_API_PORT must differ ($ETCD_PORT $ETCD_PEER_PORT $KUBE_API_PORT)"
fi

# Binary paths from the build script (single source of versions and cache layout).
paths="$(bash "$REPO/scripts/kube-build.sh" --paths)" || die "scripts/kube-build.sh --paths failed"
KUBE_APISERVER="$(sed -n 's/^KUBE_APISERVER=//p' <<<"$paths")"
KUBECTL="$(sed -n 's/^KUBECTL=//p' <<<"$paths")"
ETCD="$(sed -n 's/^ETCD=//p' <<<"$paths")"
KUBE_VERSION="$(sed -n 's/^KUBE_VERSION=//p' <<<"$paths")"
ETCD_VERSION="$(sed -n 's/^ETCD_VERSION=//p' <<<"$paths")"

mkdir -p "$STATE"
STATE="$(cd "$STATE" && pwd)"
RUN="$STATE/run"
LOGS="$STATE/logs"
PKI="$STATE/pki"
KUBECONFIG_FILE="$STATE/kubeconfig"
mkdir -p "$RUN" "$LOGS"

port_of() {
  case "$1" in
    etcd) echo "$ETCD_PORT" ;;
    apiserver) echo "$KUBE_API_PORT" ;;
  esac
}

# A string unique to this state dir that the service's command line contains,
# used to tell our process from an unrelated one that reused the pid.
marker_of() {
  case "$1" in
    etcd) echo "$STATE/etcd-data" ;;
    apiserver) echo "$PKI/apiserver.crt" ;;
  esac
}

# Is 127.0.0.1:PORT free to listen on? (Node's listen sets SO_REUSEADDR, as servers do.)
port_free() {
  node -e '
    const s = require("net").createServer();
    s.once("error", () => process.exit(1));
    s.listen(Number(process.argv[1]), "127.0.0.1", () => s.close(() => process.exit(0)));
  ' "$1" 2>/dev/null
}

require_bin() {
  [[ -x "$1" ]] || die "$2: $1 not found; run scripts/kube-build.sh (builds $2 from Go modules once per machine, several minutes the first time)"
}

require_tools() {
  command -v node >/dev/null 2>&1 || die "node not found on PATH (used for port and health checks)"
  command -v openssl >/dev/null 2>&1 || die "openssl not found; install it (Debian: apt-get install openssl; listed in scripts/apt-packages.txt)"
}

kubectl_admin() {
  KUBECACHEDIR="$STATE/kubectl-cache" "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" "$@"
}

healthy() {
  local svc="$1" port; port="$(port_of "$svc")"
  case "$svc" in
    etcd)
      node -e '
        fetch(`http://127.0.0.1:${process.argv[1]}/health`, { signal: AbortSignal.timeout(3000) })
          .then((r) => r.json()).then((b) => process.exit(b.health === "true" ? 0 : 1), () => process.exit(1));
      ' "$port" 2>/dev/null ;;
    apiserver)
      [[ -x "$KUBECTL" && -f "$KUBECONFIG_FILE" ]] || return 1
      [[ "$(kubectl_admin --request-timeout=5s get --raw /readyz 2>/dev/null)" == ok ]] ;;
  esac
}

close_inherited_fds() {
  local fd
  for fd in /proc/$BASHPID/fd/*; do
    fd="${fd##*/}"
    [[ "$fd" =~ ^[0-9]+$ && "$fd" -gt 2 ]] || continue
    eval "exec $fd>&-" 2>/dev/null || true
  done
}

# ------------------------------------------------------------ configs ----
# One-time key and certificate material (kept across restarts so clients'
# kubeconfigs and service-account tokens stay valid).
ensure_pki() {
  mkdir -p "$PKI"
  chmod 700 "$PKI"
  local o=(openssl)
  if [[ ! -s "$PKI/ca.key" || ! -s "$PKI/ca.crt" ]]; then
    log "pki: creating CA ($PKI/ca.crt)"
    "${o[@]}" req -x509 -newkey rsa:2048 -nodes -sha256 -days 3650 -subj "/CN=metalflow-kube-ca" \
      -keyout "$PKI/ca.key" -out "$PKI/ca.crt" -addext "basicConstraints=critical,CA:TRUE" \
      -addext "keyUsage=critical,keyCertSign,cRLSign" >/dev/null 2>&1 || die "pki: openssl could not create the CA"
    rm -f "$PKI/apiserver.crt" "$PKI/admin.crt"
  fi
  if [[ ! -s "$PKI/apiserver.key" || ! -s "$PKI/apiserver.crt" ]]; then
    log "pki: creating serving certificate for 127.0.0.1 and localhost"
    sign_cert apiserver "/CN=kube-apiserver" "serverAuth" \
      "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
  fi
  if [[ ! -s "$PKI/admin.key" || ! -s "$PKI/admin.crt" ]]; then
    log "pki: creating admin client certificate (CN=metalflow-admin, O=system:masters)"
    sign_cert admin "/O=system:masters/CN=metalflow-admin" "clientAuth" ""
  fi
  if [[ ! -s "$PKI/sa.key" || ! -s "$PKI/sa.pub" ]]; then
    log "pki: creating service-account signing key pair"
    "${o[@]}" genrsa -out "$PKI/sa.key" 2048 >/dev/null 2>&1 || die "pki: openssl genrsa failed"
    "${o[@]}" rsa -in "$PKI/sa.key" -pubout -out "$PKI/sa.pub" >/dev/null 2>&1 || die "pki: openssl rsa -pubout failed"
  fi
  chmod 600 "$PKI"/*.key
}

# sign_cert NAME SUBJECT EXTENDED_KEY_USAGE [SAN_EXTENSION]
sign_cert() {
  local name="$1" subj="$2" eku="$3" san="$4" ext
  ext="$(mktemp)"
  {
    echo "basicConstraints=critical,CA:FALSE"
    echo "keyUsage=critical,digitalSignature,keyEncipherment"
    echo "extendedKeyUsage=$eku"
    [[ -z "$san" ]] || echo "$san"
  } >"$ext"
  openssl req -new -newkey rsa:2048 -nodes -sha256 -subj "$subj" \
    -keyout "$PKI/$name.key" -out "$PKI/$name.csr" >/dev/null 2>&1 \
    && openssl x509 -req -in "$PKI/$name.csr" -CA "$PKI/ca.crt" -CAkey "$PKI/ca.key" -CAcreateserial \
      -days 3650 -sha256 -extfile "$ext" -out "$PKI/$name.crt" >/dev/null 2>&1 \
    || { rm -f "$ext"; die "pki: openssl could not create $name certificate"; }
  rm -f "$ext" "$PKI/$name.csr"
}

write_kubeconfig() {
  local b64="base64 -w0" tmp="$KUBECONFIG_FILE.tmp.$$"
  (umask 077; : >"$tmp")
  cat >"$tmp" <<EOF
# Generated by scripts/kube.sh: admin (system:masters) of the local API server.
apiVersion: v1
kind: Config
clusters:
- name: metalflow-local
  cluster:
    server: https://$HOST:$KUBE_API_PORT
    certificate-authority-data: $($b64 "$PKI/ca.crt")
users:
- name: metalflow-admin
  user:
    client-certificate-data: $($b64 "$PKI/admin.crt")
    client-key-data: $($b64 "$PKI/admin.key")
contexts:
- name: metalflow-local
  context:
    cluster: metalflow-local
    user: metalflow-admin
    namespace: default
current-context: metalflow-local
EOF
  mv -f "$tmp" "$KUBECONFIG_FILE"
}

prepare_etcd() { mkdir -p "$STATE/etcd-data"; chmod 700 "$STATE/etcd-data"; }

prepare_apiserver() {
  ensure_pki
  write_kubeconfig
}

# `env -u` arguments dropping the caller's ETCD_* variables: etcd reads
# ETCD_<FLAG> from the environment (our ETCD_PORT would only warn, but e.g. an
# exported ETCD_DATA_DIR would conflict with the flags below).
etcd_env_unset() {
  local v
  for v in $(compgen -e | grep '^ETCD_' || true); do printf '%s\n' -u "$v"; done
}

command_of() {
  case "$1" in
    etcd)
      local unset_args=(); mapfile -t unset_args < <(etcd_env_unset)
      CMD=(env "${unset_args[@]}" "$ETCD" --name metalflow --data-dir "$STATE/etcd-data"
        --listen-client-urls "http://$HOST:$ETCD_PORT" --advertise-client-urls "http://$HOST:$ETCD_PORT"
        --listen-peer-urls "http://$HOST:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://$HOST:$ETCD_PEER_PORT"
        --initial-cluster "metalflow=http://$HOST:$ETCD_PEER_PORT" --initial-cluster-state new
        --log-level warn) ;;
    apiserver)
      # --advertise-address: the API server otherwise looks for a default
      # route (fails on machines without one); loopback is not a valid
      # address for the `kubernetes` Service endpoints, so their reconciler is off.
      CMD=("$KUBE_APISERVER"
        --etcd-servers "http://$HOST:$ETCD_PORT"
        --bind-address "$HOST" --secure-port "$KUBE_API_PORT"
        --advertise-address "$HOST" --endpoint-reconciler-type none
        --tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key"
        --client-ca-file "$PKI/ca.crt"
        --authorization-mode RBAC
        --service-account-issuer "$SA_ISSUER"
        --service-account-key-file "$PKI/sa.pub" --service-account-signing-key-file "$PKI/sa.key"
        --service-cluster-ip-range "$KUBE_SERVICE_CIDR"
        --profiling=false) ;;
  esac
}

# ------------------------------------------------------------ actions ----
wait_healthy() {
  local svc="$1" pid="$2" deadline=$((SECONDS + HEALTH_TIMEOUT))
  while ((SECONDS < deadline)); do
    if healthy "$svc"; then return 0; fi
    if ! kill -0 "$pid" 2>/dev/null || [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || echo Z)" == Z ]]; then
      rm -f "$RUN/$svc.pid" "$RUN/$svc.port"
      log_tail "$svc"; die "$svc: process $pid exited during startup"
    fi
    sleep 0.5
  done
  log_tail "$svc"
  die "$svc: not healthy after ${HEALTH_TIMEOUT}s (pid $pid still running; log $LOGS/$svc.log)"
}

precheck_one() {
  case "$1" in
    etcd)
      require_bin "$ETCD" etcd
      require_port etcd "$ETCD_PORT" "etcd client" ETCD_PORT
      require_port etcd "$ETCD_PEER_PORT" "etcd peer" ETCD_PEER_PORT ;;
    apiserver)
      require_bin "$KUBE_APISERVER" kube-apiserver
      require_bin "$KUBECTL" kubectl
      require_port apiserver "$KUBE_API_PORT" "kube-apiserver HTTPS" KUBE_API_PORT ;;
  esac
}

recorded_ports_of() {
  case "$1" in
    etcd) echo "$ETCD_PORT $ETCD_PEER_PORT" ;;
    apiserver) echo "$KUBE_API_PORT $ETCD_PORT" ;;   # the apiserver also depends on etcd's port
  esac
}

start_one() {
  local svc="$1" pid recorded
  pid="$(running_pid "$svc")"
  if [[ -n "$pid" ]]; then
    recorded="$(cat "$RUN/$svc.port" 2>/dev/null || true)"
    if [[ -n "$recorded" && "$recorded" != "$(recorded_ports_of "$svc")" ]]; then
      die "$svc: already running (pid $pid) with ports $recorded, not $(recorded_ports_of "$svc"); run 'scripts/kube.sh stop' first"
    fi
    if [[ "$svc" == apiserver ]]; then write_kubeconfig; fi
    if healthy "$svc"; then
      log "$svc: already running (pid $pid, port $(port_of "$svc"))"
      return 0
    fi
    log "$svc: running (pid $pid) but not healthy yet; waiting"
    wait_healthy "$svc" "$pid"
    log "$svc: healthy (pid $pid, port $(port_of "$svc"))"
    return 0
  fi

  precheck_one "$svc"
  "prepare_$svc"
  command_of "$svc"
  local logfile="$LOGS/$svc.log"
  touch "$logfile"
  printf '\n===== %s kube.sh start %s (port %s) =====\n' "$(date -Is)" "$svc" "$(port_of "$svc")" >>"$logfile"
  # setsid: own session and process group; stdio detached (see stack.sh);
  # every other inherited descriptor closed, so that a caller's lock (e.g.
  # `flock FILE scripts/kube.sh start`) is not held for the daemon's lifetime.
  ( close_inherited_fds; exec setsid "${CMD[@]}" ) </dev/null >>"$logfile" 2>&1 &
  pid=$!
  echo "$pid" >"$RUN/$svc.pid"
  recorded_ports_of "$svc" >"$RUN/$svc.port"
  log "$svc: started pid $pid on $HOST:$(port_of "$svc"); waiting for health (max ${HEALTH_TIMEOUT}s)"
  local t0=$SECONDS
  wait_healthy "$svc" "$pid"
  log "$svc: healthy after $((SECONDS - t0))s"
}

status_all() {
  local svc pid rc=0
  for svc in "${SERVICES[@]}"; do
    pid="$(running_pid "$svc" 2>/dev/null)"
    if [[ -z "$pid" ]]; then
      printf '%-10s stopped   port=%s\n' "$svc" "$(port_of "$svc")"; rc=1
    elif healthy "$svc"; then
      printf '%-10s running   pid=%s port=%s healthy\n' "$svc" "$pid" "$(port_of "$svc")"
    else
      printf '%-10s running   pid=%s port=%s UNHEALTHY (log %s)\n' "$svc" "$pid" "$(port_of "$svc")" "$LOGS/$svc.log"; rc=1
    fi
  done
  printf 'kubernetes %s, etcd %s\nstate dir: %s\nkubeconfig: %s\n' "$KUBE_VERSION" "$ETCD_VERSION" "$STATE" "$KUBECONFIG_FILE"
  return $rc
}

print_env() {
  cat <<EOF
export METALFLOW_KUBE_STATE_DIR=$STATE
export KUBECONFIG=$KUBECONFIG_FILE
export KUBE_API_URL=https://$HOST:$KUBE_API_PORT
export KUBECTL=$KUBECTL
export KUBECACHEDIR=$STATE/kubectl-cache
export PATH=$(dirname "$KUBECTL"):\$PATH
EOF
}

start_selected() {
  require_tools
  for s in "${SELECTED[@]}"; do
    if [[ -z "$(running_pid "$s")" ]]; then precheck_one "$s"; fi
  done
  for s in "${SERVICES[@]}"; do
    if selected "$s"; then start_one "$s"; fi
  done
}

cmd="${1:-}"; shift || true
# The dispatch below is one compound command, parsed in full before it runs.
case "$cmd" in
  start)
    select_services "$@"; lock
    if selected apiserver && ! selected etcd && [[ -z "$(running_pid etcd)" ]]; then
      die "apiserver: etcd is not running; run 'scripts/kube.sh start' (both)"
    fi
    start_selected
    log "ready: kubernetes $KUBE_VERSION at https://$HOST:$KUBE_API_PORT, etcd $ETCD_VERSION; KUBECONFIG=$KUBECONFIG_FILE" ;;
  stop)
    select_services "$@"; lock; stop_selected ;;
  restart)
    select_services "$@"; lock; stop_selected; start_selected ;;
  status) status_all ;;
  env) print_env ;;
  logs)
    [[ $# -eq 1 ]] || die "usage: kube.sh logs etcd|apiserver"
    select_services "$1"; echo "$LOGS/$1.log" ;;
  kubectl)
    require_bin "$KUBECTL" kubectl
    [[ -f "$KUBECONFIG_FILE" ]] || die "no kubeconfig at $KUBECONFIG_FILE; run 'scripts/kube.sh start' first"
    KUBECACHEDIR="$STATE/kubectl-cache" exec "$KUBECTL" --kubeconfig "$KUBECONFIG_FILE" "$@" ;;
  clean)
    SELECTED=("${SERVICES[@]}"); lock; stop_selected
    exec 9>&-
    rm -rf "$STATE"
    log "removed $STATE" ;;
  ""|-h|--help|help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}" ;;
  *) die "unknown command '$cmd' (start|stop|restart|status|env|logs|kubectl|clean)" ;;
esac; exit   # same line: bash has parsed the whole command before a long start runs, so edits to this file cannot derail it
