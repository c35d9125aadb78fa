#!/usr/bin/env bash
# One test host's "booted ramdisk": a real ironic-python-agent (IPA) running
# on this machine, fenced off from it. Run as root.
#
#   scripts/agent/ipa-host.sh start NAME --mac MAC --disks SIZE[,SIZE...]
#                                  --cmdline FILE --agent-port PORT
#                                  --forward PORT[,PORT...] [--poweroff-url URL]
#   scripts/agent/ipa-host.sh stop NAME      agent stopped, loop devices detached,
#                                            disk files kept
#   scripts/agent/ipa-host.sh destroy NAME   stop, then delete the disk files
#   scripts/agent/ipa-host.sh status NAME    exit 0 while the agent runs
#   scripts/agent/ipa-host.sh kill NAME      SIGKILL to the agent alone, as a
#                                            ramdisk that crashes: the host
#                                            stays up (namespaces, forwarders,
#                                            loop devices), nothing tells the
#                                            BMC; prints the agent's pid once
#                                            it is gone
#   scripts/agent/ipa-host.sh disks NAME     the disk files, one a line
#
# What a host gets (all under $METALFLOW_AGENT_STATE/NAME, default
# <repo>/.state/agent/NAME):
# - disks: sparse files disk0.img, disk1.img, ... attached as loop devices;
# - a network namespace whose only links are loopback and a veth pair with
#   the host's boot MAC (both ends inside it: no route leaves it). Each
#   --forward PORT is bridged from 127.0.0.1:PORT inside the namespace to
#   127.0.0.1:PORT outside through a unix socket in the state dir, and the
#   agent's own API (127.0.0.1:9999 inside) is reachable outside on
#   127.0.0.1:--agent-port. So the agent reaches Ironic and the image server
#   and nothing else, and all traffic stays on loopback;
# - a private mount namespace and PID namespace (scripts/agent/ipa-ns.sh) whose /dev holds only
#   these loop devices, whose /sys/block lists only them, whose root file
#   system is read-only (only tmpfs scratch and the state dir are writable),
#   with /proc/cmdline replaced by --cmdline (the kernel command line Ironic
#   put on the virtual-media ISO) and /proc/sysrq-trigger by /dev/null;
# - IPA with the metalflow_loop hardware manager (scripts/agent/hwm), which
#   lists only these loop devices and refuses to start without them.
# When the agent powers the host off (IPA's `poweroff` after a deploy), the
# shim records it and this script asks the BMC (--poweroff-url, a Redfish
# ComputerSystem.Reset target) to switch the system off, as the real host
# would drop its power.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
AGENT_VENV="${METALFLOW_AGENT_VENV:-$REPO/.venv-ipa}"
STATE_ROOT="${METALFLOW_AGENT_STATE:-$REPO/.state/agent}"

log() { printf '[ipa-host] %s\n' "$*" >&2; }
die() { printf '[ipa-host] ERROR: %s\n' "$*" >&2; exit 1; }

[[ $EUID -eq 0 ]] || die "must run as root (network and mount namespaces, loop devices)"

cmd="${1:-}"; name="${2:-}"
[[ -n "$cmd" ]] || die "usage: ipa-host.sh start|stop|destroy|status|disks NAME ..."
[[ "$name" =~ ^[a-z0-9][a-z0-9-]{0,39}$ ]] \
  || die "NAME must be 1-40 lower-case letters, digits or '-', got '$name'"
shift 2

D="$STATE_ROOT/$name"
NS="mfagent-$name"

pid_alive() { [[ -n "${1:-}" ]] && kill -0 "$1" 2>/dev/null; }

# Pids of the processes this host started, one file each under run/. The
# agent's group gets SIGKILL at once: a power cut is one, and the agent is
# its PID namespace's init, which ignores SIGTERM (no handler), so a TERM only
# made every stop wait out the grace below (5 s) before the same SIGKILL. The
# port forwarders get TERM and that grace, all waited for together.
stop_processes() {
  local f pid sig i
  local -a files=()
  for f in "$D"/run/*.pid; do
    [[ -e "$f" ]] || continue
    pid="$(cat "$f" 2>/dev/null)" || continue
    files+=("$f")
    pid_alive "$pid" || continue
    sig=TERM
    [[ "$f" == "$D/run/agent.pid" ]] && sig=KILL
    kill "-$sig" -- "-$pid" 2>/dev/null || kill "-$sig" "$pid" 2>/dev/null || true
  done
  alive() {
    local g p
    for g in "${files[@]}"; do
      p="$(cat "$g" 2>/dev/null)" || continue
      pid_alive "$p" && return 0
    done
    return 1
  }
  i=0
  while ((${#files[@]})) && alive && ((i < 50)); do sleep 0.1; i=$((i + 1)); done
  for f in "${files[@]}"; do
    pid="$(cat "$f" 2>/dev/null)" || { rm -f "$f"; continue; }
    if pid_alive "$pid"; then kill -KILL -- "-$pid" 2>/dev/null || kill -KILL "$pid" 2>/dev/null || true; fi
    rm -f "$f"
  done
}

detach_loops() {
  local img dev
  for img in "$D"/disk*.img; do
    [[ -e "$img" ]] || continue
    while read -r dev; do
      [[ -n "$dev" ]] || continue
      # An md array the agent built stays assembled on the host kernel.
      local md
      for md in /sys/block/"${dev#/dev/}"/holders/md*; do
        [[ -e "$md" ]] || continue
        mdadm --stop "/dev/$(basename "$md")" >/dev/null 2>&1 || true
      done
      losetup -d "$dev" 2>/dev/null || true
    done < <(losetup -j "$img" -O NAME -n 2>/dev/null)
  done
}

# Gone: no such process, or a zombie (dead, not yet reaped).
pid_gone() { [[ ! -e "/proc/$1" ]] || [[ "$(sed -n 's/^State:[[:space:]]*\([A-Z]\).*/\1/p' "/proc/$1/status" 2>/dev/null)" == Z ]]; }

# The agent is the init of the PID namespace run/agent.pid (unshare) made:
# its SIGKILL takes every process the agent ran with it (qemu-img, a write
# in progress), and leaves the rest of the host as it was.
do_kill() {
  local ns_parent agent cmd i=0
  ns_parent="$(cat "$D/run/agent.pid" 2>/dev/null)" || die "$name: no agent was started"
  pid_alive "$ns_parent" && ! pid_gone "$ns_parent" || die "$name: the agent is not running"
  agent="$(cat "/proc/$ns_parent/task/$ns_parent/children" 2>/dev/null)" || true
  agent="${agent%% *}"
  [[ "$agent" =~ ^[0-9]+$ ]] || die "$name: the agent's process is not there (pid $ns_parent has no child)"
  cmd="$(tr '\0' ' ' <"/proc/$agent/cmdline" 2>/dev/null)" || true
  [[ "$cmd" == *"--config-file $(realpath "$D")/ipa.conf "* ]] || die "$name: pid $agent is not this host's agent ($cmd)"
  kill -KILL "$agent"
  while ! pid_gone "$agent"; do
    ((i++ < 100)) || die "$name: agent pid $agent still there 10 s after SIGKILL"
    sleep 0.1
  done
  log "$name: agent pid $agent killed"
  echo "$agent"
}

do_stop() {
  stop_processes
  ip netns del "$NS" 2>/dev/null || true
  detach_loops
  rm -rf "$D/socks"
}

case "$cmd" in
  stop) do_stop; log "$name: stopped"; exit 0 ;;
  kill) do_kill; exit 0 ;;
  destroy) do_stop; rm -rf "$D"; log "$name: destroyed"; exit 0 ;;
  status) pid_alive "$(cat "$D/run/agent.pid" 2>/dev/null)"; exit $? ;;
  disks) ls "$D"/disk*.img 2>/dev/null; exit 0 ;;
  start) ;;
  *) die "unknown command '$cmd'" ;;
esac

mac="" disks="" cmdline="" agent_port="" forward="" poweroff_url=""
while [[ $# -gt 0 ]]; do
  case "$1" in
    --mac) mac="$2"; shift 2 ;;
    --disks) disks="$2"; shift 2 ;;
    --cmdline) cmdline="$2"; shift 2 ;;
    --agent-port) agent_port="$2"; shift 2 ;;
    --forward) forward="$2"; shift 2 ;;
    --poweroff-url) poweroff_url="$2"; shift 2 ;;
    *) die "unknown option '$1'" ;;
  esac
done
[[ "$mac" =~ ^([0-9a-f]{2}:){5}[0-9a-f]{2}$ ]] || die "--mac must be a lower-case MAC like 52:54:00:12:34:56, got '$mac'"
[[ "$disks" =~ ^[0-9]+[MG](,[0-9]+[MG])*$ ]] || die "--disks must be sizes like 8G or 8G,8G (M or G), got '$disks'"
[[ -r "$cmdline" ]] || die "--cmdline: cannot read '$cmdline'"
[[ "$agent_port" =~ ^[0-9]+$ ]] || die "--agent-port must be a port number, got '$agent_port'"
[[ "$forward" =~ ^[0-9]+(,[0-9]+)*$ ]] || die "--forward must be port numbers like 6385,8080, got '$forward'"
[[ -x "$AGENT_VENV/bin/ironic-python-agent" ]] || die "$AGENT_VENV/bin/ironic-python-agent missing; run scripts/install.sh (agent venv)"
for b in socat losetup unshare ip mknod; do command -v "$b" >/dev/null || die "$b not found (Debian packages in scripts/apt-packages.txt)"; done

if pid_alive "$(cat "$D/run/agent.pid" 2>/dev/null)"; then die "$name: agent already running (pid $(cat "$D/run/agent.pid"))"; fi
do_stop
mkdir -p "$D/run" "$D/socks" "$D/scratch"
: >"$D/ipa.log"; : >"$D/run/agent.log"
rm -f "$D/poweroff.fifo"; mkfifo "$D/poweroff.fifo"
cp "$cmdline" "$D/cmdline"

# Disks: sparse files, attached with partition scanning so the agent's
# partitions (config drive) show up as loopNpM.
loops=()
i=0
IFS=, read -r -a sizes <<<"$disks"
for size in "${sizes[@]}"; do
  img="$D/disk$i.img"
  [[ -e "$img" ]] || truncate -s "$size" "$img"
  dev="$(losetup -f --show -P "$img")"
  [[ "$dev" =~ ^/dev/loop[0-9]+$ ]] || die "losetup gave '$dev' for $img"
  loops+=("$dev")
  i=$((i + 1))
done
( IFS=,; echo "${loops[*]}" ) >"$D/loops"

# Network: loopback and the boot-MAC veth pair, both ends inside.
ip netns add "$NS"
ip -n "$NS" link set lo up
ip -n "$NS" link add eth0 address "$mac" type veth peer name peer0
ip -n "$NS" link set eth0 up
ip -n "$NS" link set peer0 up

bg() { # bg NAME CMD...: start in its own process group, record the pid
  local what="$1"; shift
  setsid "$@" </dev/null >>"$D/run/$what.log" 2>&1 &
  echo $! >"$D/run/$what.pid"
}
IFS=, read -r -a ports <<<"$forward"
for p in "${ports[@]}"; do
  bg "out-$p" socat "UNIX-LISTEN:$D/socks/$p.sock,fork,unlink-early" "TCP:127.0.0.1:$p"
  bg "in-$p" ip netns exec "$NS" socat "TCP-LISTEN:$p,bind=127.0.0.1,fork,reuseaddr" "UNIX-CONNECT:$D/socks/$p.sock"
done
bg agent-in ip netns exec "$NS" socat "UNIX-LISTEN:$D/socks/agent.sock,fork,unlink-early" "TCP:127.0.0.1:9999"
bg agent-out socat "TCP-LISTEN:$agent_port,bind=127.0.0.1,fork,reuseaddr" "UNIX-CONNECT:$D/socks/agent.sock"

cat >"$D/ipa.conf" <<EOF
[DEFAULT]
listen_host = 127.0.0.1
listen_port = 9999
advertise_host = 127.0.0.1
advertise_port = $agent_port
hardware_initialization_delay = 0
# The loop devices are attached before the agent starts: one look, no wait.
# (IPA's generic hardware manager never finds one, a loop device not being
# of type disk; each further attempt only cost each boot a second.)
disk_wait_attempts = 1
disk_wait_delay = 1
collect_lldp = false
inspection_dhcp_wait_timeout = 0
debug = true
# IPA tries a download (and a checksum that does not match) 10 times, 10 s
# apart by default: a refused image is reported after some 100 s, beyond the
# call-back wait of the failure tests' Ironic (30 s). Here 4 tries, 1 s apart:
# under a whole test run's load each try of a mismatching image took 2-3 s,
# and 10 of them came close to that wait.
image_download_connection_retries = 3
image_download_connection_retry_interval = 1
EOF

# Own PID namespace too (with its own /proc): the agent sees and can signal
# only its own processes, and everything in it dies with it.
bg agent ip netns exec "$NS" unshare --mount --propagation private --pid --fork --mount-proc --kill-child \
  env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp LANG=C.UTF-8 \
  METALFLOW_AGENT_DISKS="$(cat "$D/loops")" METALFLOW_AGENT_DIR="$D" \
  METALFLOW_AGENT_VENV="$AGENT_VENV" \
  METALFLOW_OUTER_MNTNS="$(readlink /proc/self/ns/mnt)" METALFLOW_OUTER_NETNS="$(readlink /proc/self/ns/net)" \
  bash "$REPO/scripts/agent/ipa-ns.sh"
agent_pid="$(cat "$D/run/agent.pid")"
log "$name: agent pid $agent_pid in netns $NS, disks ${loops[*]}, API 127.0.0.1:$agent_port"

# The host powers itself off when the agent asks (after a deploy): the shim
# writes to a fifo and this watcher tells the BMC, so the launcher sees the
# power go and stops the agent.
if [[ -n "$poweroff_url" ]]; then
  bg watch-poweroff bash -c '
    while true; do
      read -r what <"$1/poweroff.fifo" || continue
      curl -fsS -u "${SUSHY_USERNAME:-admin}:${SUSHY_PASSWORD:-password}" -H "Content-Type: application/json" \
        -d "{\"ResetType\": \"ForceOff\"}" "$2" >/dev/null || echo "power off via $2 failed" >&2
    done' _ "$D" "$poweroff_url"
fi
