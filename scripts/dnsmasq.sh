#!/usr/bin/env bash
# One site's DHCP server: Debian's dnsmasq (package dnsmasq-base, the binary
# only, no service) inside a network namespace this script creates, never on a
# real interface. A veth pair joins the server namespace (<netns>, interface
# mfdhcp0, address <net>.1/24) to a client namespace (<netns>-c, interface
# mfdhcp1, no address) where a DHCP client (busybox udhcpc) can ask for a lease.
# Reservations are files in the dhcp-hostsdir (clients/dnsmasq writes them;
# dnsmasq reads each file on write through inotify, no SIGHUP needed).
# Needs root (ip netns). Runs dnsmasq in the background with a pid file,
# supervised: a dnsmasq that dies (a crash, a kill) is started again within
# a second or two by a supervisor process (pid in supervisor.pid), which gives
# up after 5 starts in a row that each lived under 10 s, and when the
# namespace is gone. `stop` stops the supervisor first.
#
# Usage: scripts/dnsmasq.sh start|stop|restart|status
#   stop deletes both namespaces; restart restarts dnsmasq alone, which is how
#   it forgets released reservations (dnsmasq 2.90 keeps every entry it read
#   from the hosts dir, and refuses a new entry for an address an old one
#   holds, until it restarts; a SIGHUP crashed it, see ../shared/notes/peers.md).
#
# Environment (defaults):
#   METALFLOW_STATE_DIR  <repo>/.state/stack  state: <dir>/dnsmasq/<site>/{hosts.d,leases,dnsmasq.conf}
#   DHCP_SITE            default              instance (site) name: [a-z0-9-], 1 to 32 characters
#   DHCP_NETNS           mf-dhcp-<site>       server namespace; the client namespace is <netns>-c
#   DHCP_NET             10.251.0             first three octets of the private /24 (10.x.y or 192.168.x)
#   DHCP_UNKNOWN         ignore               ignore: unknown MACs get nothing (dhcp-ignore=tag:!known);
#                                             pool: unknown MACs get an address from <net>.100-<net>.199
#   DHCP_LEASE_TIME      1h                   lease time dnsmasq gives (dnsmasq's minimum is 2m)
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STATE="${METALFLOW_STATE_DIR:-$REPO/.state/stack}"
SITE="${DHCP_SITE:-default}"
NETNS="${DHCP_NETNS:-mf-dhcp-$SITE}"
CNETNS="$NETNS-c"
NET="${DHCP_NET:-10.251.0}"
UNKNOWN="${DHCP_UNKNOWN:-ignore}"
LEASE_TIME="${DHCP_LEASE_TIME:-1h}"
SRV_IF=mfdhcp0
CLI_IF=mfdhcp1

log() { printf '[dnsmasq %s] %s\n' "$SITE" "$*"; }
die() { printf '[dnsmasq %s] ERROR: %s\n' "$SITE" "$*" >&2; exit 1; }

[[ "$SITE" =~ ^[a-z0-9-]{1,32}$ ]] || die "DHCP_SITE must be 1 to 32 of [a-z0-9-], got '$SITE'"
[[ "$NETNS" =~ ^[A-Za-z0-9_-]{1,48}$ ]] || die "DHCP_NETNS must be 1 to 48 of [A-Za-z0-9_-], got '$NETNS'"
# Only private test subnets: this script never hands out public addresses.
[[ "$NET" =~ ^(10\.[0-9]{1,3}\.[0-9]{1,3}|192\.168\.[0-9]{1,3})$ ]] ||
  die "DHCP_NET must be the first three octets of a private /24 (10.x.y or 192.168.x), got '$NET'"
[[ "$UNKNOWN" == ignore || "$UNKNOWN" == pool ]] || die "DHCP_UNKNOWN must be 'ignore' or 'pool', got '$UNKNOWN'"
[[ "$LEASE_TIME" =~ ^[0-9]+[smhd]?$ ]] || die "DHCP_LEASE_TIME must be a number with an optional s/m/h/d unit, got '$LEASE_TIME'"

mkdir -p "$STATE"
STATE="$(cd "$STATE" && pwd)"
DIR="$STATE/dnsmasq/$SITE"
HOSTSDIR="$DIR/hosts.d"
LEASES="$DIR/dnsmasq.leases"
CONF="$DIR/dnsmasq.conf"
PIDFILE="$DIR/dnsmasq.pid"
SUPPIDFILE="$DIR/supervisor.pid"
LOG="$STATE/logs/dnsmasq-$SITE.log"

netns_exists() { ip netns list | awk '{print $1}' | grep -qxF -- "$1"; }

# The pid in pid file $1 when that process runs and its command line holds $2, or nothing.
pid_of() {
  local pid
  [[ -f "$1" ]] || return 0
  pid="$(cat "$1" 2>/dev/null || true)"
  if [[ "$pid" =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$2"; then
    echo "$pid"
  fi
  return 0
}
# Our dnsmasq (its command line names our config); our supervisor (it names this site's state dir).
running_pid() { pid_of "$PIDFILE" "$CONF"; }
supervisor_pid() { pid_of "$SUPPIDFILE" "_supervise $DIR"; }

# The supervisor's loop: dnsmasq in the foreground, started again when it exits.
supervise() {
  local started rc quick=0
  trap 'exit 0' TERM INT
  echo "$$" >"$SUPPIDFILE"
  while netns_exists "$NETNS"; do
    started=$SECONDS
    rc=0
    ip netns exec "$NETNS" dnsmasq --keep-in-foreground --conf-file="$CONF" </dev/null >>"$LOG" 2>&1 & wait $! || rc=$?
    if ((SECONDS - started < 10)); then quick=$((quick + 1)); else quick=0; fi
    if ((quick >= 5)); then
      printf '%s supervisor: dnsmasq exited (status %s) 5 times within 10 s of its start; giving up (scripts/dnsmasq.sh start)\n' "$(date -Is)" "$rc" >>"$LOG"
      break
    fi
    printf '%s supervisor: dnsmasq exited (status %s); starting it again\n' "$(date -Is)" "$rc" >>"$LOG"
    sleep 1
  done
  rm -f "$SUPPIDFILE"
}

make_netns() {
  netns_exists "$NETNS" || ip netns add "$NETNS"
  netns_exists "$CNETNS" || ip netns add "$CNETNS"
  # Created inside the namespaces, so the names never meet the host's interfaces.
  if ! ip -n "$NETNS" link show "$SRV_IF" >/dev/null 2>&1; then
    ip -n "$NETNS" link add "$SRV_IF" type veth peer name "$CLI_IF" netns "$CNETNS"
  fi
  ip -n "$NETNS" addr replace "$NET.1/24" dev "$SRV_IF"
  ip -n "$NETNS" link set lo up
  ip -n "$NETNS" link set "$SRV_IF" up
  ip -n "$CNETNS" link set lo up
  ip -n "$CNETNS" link set "$CLI_IF" up
}

write_conf() {
  local user="$1" range
  if [[ "$UNKNOWN" == pool ]]; then
    range="dhcp-range=$NET.100,$NET.199,255.255.255.0,$LEASE_TIME"
  else
    range="dhcp-range=$NET.0,static,255.255.255.0,$LEASE_TIME
dhcp-ignore=tag:!known"
  fi
  cat >"$CONF" <<EOF
# Generated by scripts/dnsmasq.sh on every start (site $SITE, namespace $NETNS).
# DHCP only: port=0 turns the DNS server off.
port=0
no-resolv
no-hosts
interface=$SRV_IF
bind-interfaces
dhcp-authoritative
# No ping before offering a pool address (nothing else lives on this link; the
# ping delays the OFFER by seconds) and broadcast replies (a failed ARP entry
# left by a ping would drop a unicast OFFER).
no-ping
dhcp-broadcast
$range
dhcp-hostsdir=$HOSTSDIR
dhcp-leasefile=$LEASES
pid-file=$PIDFILE
user=$user
log-dhcp
log-facility=$LOG
EOF
}

start() {
  command -v dnsmasq >/dev/null || die "dnsmasq not found: install the Debian package dnsmasq-base (scripts/install.sh does)"
  [[ "$(id -u)" == 0 ]] || die "needs root (ip netns)"
  local pid
  pid="$(running_pid)"
  if [[ -n "$pid" ]]; then log "already running (pid $pid, namespace $NETNS)"; return 0; fi
  mkdir -p "$HOSTSDIR" "$STATE/logs"
  # dnsmasq drops to its own user and reads reservation files as that user.
  chmod 755 "$DIR" "$HOSTSDIR"
  local user=dnsmasq
  id -u "$user" >/dev/null 2>&1 || user=nobody
  setpriv --reuid="$user" --regid="$(id -g "$user")" --clear-groups test -r "$HOSTSDIR/." -a -x "$HOSTSDIR" ||
    die "user $user (dnsmasq runs as it) cannot read $HOSTSDIR: make every directory above it world-searchable (chmod o+x) or use another METALFLOW_STATE_DIR"
  touch "$LEASES"
  make_netns
  write_conf "$user"
  rm -f "$PIDFILE"
  printf '\n===== %s dnsmasq.sh start (%s, %s.1/24, unknown MACs: %s) =====\n' "$(date -Is)" "$NETNS" "$NET" "$UNKNOWN" >>"$LOG"
  # The supervisor in its own session, so it outlives this script and its caller's terminal.
  setsid bash "${BASH_SOURCE[0]}" _supervise "$DIR" </dev/null >>"$LOG" 2>&1 &
  for _ in $(seq 1 50); do
    pid="$(running_pid)"
    if [[ -n "$pid" ]]; then
      log "started pid $pid in namespace $NETNS ($SRV_IF $NET.1/24; clients: ip netns exec $CNETNS ... -i $CLI_IF); hosts dir $HOSTSDIR; leases $LEASES; log $LOG"
      return 0
    fi
    sleep 0.1
  done
  tail -20 "$LOG" >&2
  die "dnsmasq wrote no pid file within 5 s"
}

stop_supervisor() {
  local pid i
  pid="$(supervisor_pid)"
  [[ -n "$pid" ]] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  rm -f "$SUPPIDFILE"
}

stop_dnsmasq() {
  local pid i
  stop_supervisor
  pid="$(running_pid)"
  if [[ -n "$pid" ]]; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
    log "stopped pid $pid"
  else
    log "not running"
  fi
  rm -f "$PIDFILE"
}

stop() {
  stop_dnsmasq
  # Deleting a namespace deletes the veth pair with it.
  netns_exists "$CNETNS" && ip netns del "$CNETNS"
  netns_exists "$NETNS" && ip netns del "$NETNS"
  return 0
}

case "${1:-}" in
  start) start ;;
  _supervise) supervise ;;
  stop) stop ;;
  # dnsmasq reads the whole hosts dir again and keeps its leases file; the namespaces stay.
  restart) stop_dnsmasq; start ;;
  status)
    pid="$(running_pid)"
    if [[ -n "$pid" ]]; then echo "dnsmasq   running   pid=$pid site=$SITE netns=$NETNS net=$NET.0/24 unknown=$UNKNOWN supervisor=$(supervisor_pid)"; else echo "dnsmasq   stopped   site=$SITE netns=$NETNS"; exit 1; fi ;;
  *) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; [[ -z "${1:-}" || "$1" == -h || "$1" == --help ]] ;;
esac
