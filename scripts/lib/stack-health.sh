# Health of scripts/stack.sh's services: is a port free, does a service
# answer (Temporal's cluster and namespace, Ironic's drivers, sushy's systems),
# and the wait for health after a start, failing fast on a dead process or a
# fatal log line. Sourced by scripts/stack.sh, not run: it uses the script's
# settings (VENV, HOST, RUN, LOGS, HEALTH_TIMEOUT, SUSHY_USERNAME/PASSWORD),
# port_of/scheme_of, log/die, and services.sh's log_tail/stop_one.

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
    httpboot)
      http_check "http://$HOST:$port/" "" "status == 200" ;;
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

