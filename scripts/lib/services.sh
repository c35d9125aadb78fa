# Process supervision shared by scripts/stack.sh and scripts/kube.sh: each
# service is a background process leading its own process group, with a pid
# file and a port file under $RUN and a log under $LOGS. Sourced, not run.
#
# The sourcing script defines: SERVICES (start order), STATE, RUN, LOGS, HOST,
# SCRIPT (its name, for messages), log/err/die, marker_of SVC (a string unique
# to this state dir that the service's command line contains), port_free PORT,
# and optionally run_files SVC (extra files under $RUN that describe a running
# service, removed with its pid file).

run_files() { :; }

# pid of the running service, or nothing (a stale pid file is removed).
running_pid() {
  local svc="$1" pidfile="$RUN/$1.pid" pid state
  [[ -f "$pidfile" ]] || return 0
  pid="$(cat "$pidfile" 2>/dev/null || true)"
  if [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null; then
    state="$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || echo Z)"
    # The marker tells our process from an unrelated one that reused the pid.
    if [[ "$state" != Z ]] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$(marker_of "$svc")"; then
      echo "$pid"
      return 0
    fi
  fi
  log "$svc: removing stale pid file ($pidfile, pid '${pid}')" >&2
  forget_run_files "$svc"
}

forget_run_files() {
  local svc="$1" f
  rm -f "$RUN/$svc.pid" "$RUN/$svc.port"
  for f in $(run_files "$svc"); do rm -f "$RUN/$f"; done
}

port_owner() {
  if command -v ss >/dev/null 2>&1; then
    ss -Hltnp "sport = :$1" 2>/dev/null | sed -n 's/.*users:(\(.*\))$/\1/p' | head -1
  fi
}

# require_port SVC PORT WHAT ENV_NAME
require_port() {
  local svc="$1" port="$2" what="$3" owner
  if ! port_free "$port"; then
    owner="$(port_owner "$port")"
    die "$svc: port $port ($what) on $HOST is already in use${owner:+ by $owner}; stop that process or pick another port (env $4)"
  fi
}

log_tail() {
  local svc="$1" file="$LOGS/$1.log"
  err "$svc: last lines of $file:"
  if [[ -f "$file" ]]; then tail -n "${2:-40}" "$file" | sed 's/^/    /' >&2; fi
}

stop_one() {
  local svc="$1" pid i
  pid="$(running_pid "$svc")"
  if [[ -z "$pid" ]]; then
    log "$svc: not running"
    forget_run_files "$svc"
    return 0
  fi
  log "$svc: stopping pid $pid"
  # The service leads its own process group (setsid); signal the whole group
  # (ironic forks a worker process).
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 300; i++)); do
    if ! kill -0 -- "-$pid" 2>/dev/null; then break; fi
    # a zombie leader (not yet reaped) with no live group members counts as gone
    if [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || echo Z)" == Z ]] &&
       ! pgrep -g "$pid" >/dev/null 2>&1; then break; fi
    sleep 0.1
  done
  if kill -0 -- "-$pid" 2>/dev/null && [[ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null || echo Z)" != Z ]]; then
    log "$svc: still running after 30s, sending SIGKILL"
    kill -KILL -- "-$pid" 2>/dev/null || true
    sleep 0.5
  fi
  forget_run_files "$svc"
  log "$svc: stopped"
}

# SELECTED: the named services (all when none is named), each checked against SERVICES.
select_services() {
  SELECTED=()
  if [[ $# -eq 0 ]]; then SELECTED=("${SERVICES[@]}"); return; fi
  local s known
  known="$(printf '%s, ' "${SERVICES[@]}")"
  for s in "$@"; do
    if [[ " ${SERVICES[*]} " == *" $s "* ]]; then SELECTED+=("$s"); else die "unknown service '$s' (${known%, })"; fi
  done
}

selected() { [[ " ${SELECTED[*]} " == *" $1 "* ]]; }

reverse() { local i; for ((i = $# ; i > 0 ; i--)); do printf '%s\n' "${!i}"; done; }

stop_selected() {
  local s
  for s in $(reverse "${SERVICES[@]}"); do
    if selected "$s"; then stop_one "$s"; fi
  done
}

lock() {
  exec 9>"$RUN/.lock"
  if command -v flock >/dev/null 2>&1; then
    flock -w 180 9 || die "another $SCRIPT start/stop holds $RUN/.lock"
  fi
}
