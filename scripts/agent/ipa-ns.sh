#!/usr/bin/env bash
# Inside a test host's network namespace and a fresh private mount namespace
# (started by scripts/agent/ipa-host.sh, not by hand): fence the machine off,
# then exec ironic-python-agent. Environment: METALFLOW_AGENT_DISKS (comma-
# separated /dev/loopN), METALFLOW_AGENT_DIR (the host's state dir),
# METALFLOW_AGENT_VENV.
set -euo pipefail
# Real paths: a symlink on the way (a checkout under /tmp) would not resolve
# once the scratch tmpfs below hides where it points from.
D="$(realpath "$METALFLOW_AGENT_DIR")"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)"
VENV="$(realpath "$METALFLOW_AGENT_VENV")"
IFS=, read -r -a LOOPS <<<"$METALFLOW_AGENT_DISKS"
die() { echo "[ipa-ns] ERROR: $*" >&2; exit 1; }
# `agent_token = X`, `agent_token=X`, `'agent_token': 'X'`, `ipa-agent-token=X` -> the same with X masked.
IPA_LOG_REDACT="s/(agent[_-]token['\"]?[[:space:]]*[=:][[:space:]]*['\"]?)[A-Za-z0-9_-]{8,}/\\1***/g"

# Refuse to go on unless this really is a mount namespace of our own: every
# mount below would otherwise land on the machine.
[[ -n "${METALFLOW_OUTER_MNTNS:-}" && -n "${METALFLOW_OUTER_NETNS:-}" ]] || die "METALFLOW_OUTER_MNTNS/NETNS not set (run via ipa-host.sh)"
[[ "$(readlink /proc/self/ns/mnt)" != "$METALFLOW_OUTER_MNTNS" ]] || die "not in a private mount namespace"
[[ "$(readlink /proc/self/ns/net)" != "$METALFLOW_OUTER_NETNS" ]] || die "not in a network namespace"
for l in "${LOOPS[@]}"; do [[ "$l" =~ ^/dev/loop[0-9]+$ ]] || die "not a loop device: $l"; done

mkdir -p "$D/scratch/shims"
mount --make-rprivate /

# /dev: the basic character devices and this host's loop devices only.
mount -t tmpfs -o mode=755,nosuid devtmp /dev
mknod -m 666 /dev/null c 1 3
mknod -m 666 /dev/zero c 1 5
mknod -m 666 /dev/full c 1 7
mknod -m 666 /dev/random c 1 8
mknod -m 666 /dev/urandom c 1 9
mknod -m 666 /dev/tty c 5 0
mkdir -p /dev/pts /dev/shm /dev/disk/by-path
ln -s /proc/self/fd /dev/fd
ln -s /proc/self/fd/0 /dev/stdin
ln -s /proc/self/fd/1 /dev/stdout
ln -s /proc/self/fd/2 /dev/stderr

# Device nodes (and /sys/block links) for the loop devices, their partitions
# and md arrays built on them. Run again by the udevadm shim on every
# `udevadm settle`, which IPA calls after changing partitions.
cat >"$D/scratch/shims/metalflow-devsync" <<'EOF'
#!/usr/bin/env bash
IFS=, read -r -a LOOPS <<<"$METALFLOW_AGENT_DISKS"
node() { # node SYSDIR: a block node in /dev and a /sys/block link for it
  local sys="$1" kname devno
  kname="$(basename "$sys")"
  devno="$(cat "$sys/dev" 2>/dev/null)" || return 0
  [[ -e "/dev/$kname" ]] || mknod -m 660 "/dev/$kname" b "${devno%%:*}" "${devno##*:}"
}
for l in "${LOOPS[@]}"; do
  k="${l#/dev/}"
  [[ -e "/sys/block/$k" ]] || ln -s "../devices/virtual/block/$k" "/sys/block/$k"
  node "/sys/devices/virtual/block/$k"
  for p in /sys/devices/virtual/block/"$k"/"$k"p*; do [[ -e "$p" ]] && node "$p"; done
  for h in /sys/devices/virtual/block/"$k"/holders/md*; do
    [[ -e "$h" ]] || continue
    md="$(basename "$h")"
    [[ -e "/sys/block/$md" ]] || ln -s "../devices/virtual/block/$md" "/sys/block/$md"
    node "/sys/devices/virtual/block/$md"
    for p in /sys/devices/virtual/block/"$md"/"$md"p*; do [[ -e "$p" ]] && node "$p"; done
  done
done
# Partitions that are gone lose their node.
for n in /dev/loop*p* /dev/md*p*; do
  [[ -e "$n" ]] || continue
  k="$(basename "$n")"
  [[ -e "/sys/class/block/$k" ]] || rm -f "$n"
done
exit 0
EOF
chmod +x "$D/scratch/shims/metalflow-devsync"

# /sys/block lists only our devices (lsblk enumerates it). /sys/class/block
# still names every device, but without a node in /dev none can be opened.
mount -t tmpfs -o mode=755 sysblock /sys/block
mount -t tmpfs -o mode=755 nofw /sys/firmware
METALFLOW_AGENT_DISKS="$METALFLOW_AGENT_DISKS" "$D/scratch/shims/metalflow-devsync"

# The kernel command line the virtual-media ISO carried; and no sysrq: IPA
# falls back to `echo o > /proc/sysrq-trigger` when `poweroff` fails.
mount --bind "$D/cmdline" /proc/cmdline
if [[ -e /proc/sysrq-trigger ]]; then mount --bind /dev/null /proc/sysrq-trigger; fi

# Commands that would act on the machine rather than on the test host.
for c in poweroff reboot shutdown halt; do
  cat >"$D/scratch/shims/$c" <<EOF
#!/bin/sh
echo "test host: $c requested" >&2
timeout 5 sh -c 'echo $c > "$D/poweroff.fifo"' 2>/dev/null || true
exit 0
EOF
done
for c in modprobe rmmod insmod efibootmgr multipathd multipath hwclock iscsistart; do
  printf '#!/bin/sh\necho "test host: %s is not run here" >&2\nexit 1\n' "$c" >"$D/scratch/shims/$c"
done
cat >"$D/scratch/shims/udevadm" <<'EOF'
#!/bin/sh
# No udev daemon sees this /dev: settle means "make the nodes now".
case "$1" in
  settle|trigger) exec "$(dirname "$0")/metalflow-devsync" ;;
  *) exec /usr/bin/udevadm "$@" ;;
esac
EOF
chmod +x "$D/scratch/shims/"*

# Read-only machine: scratch tmpfs for the places the agent writes, the state
# dir stays writable (it holds the log, the fifo and the shims).
# What the agent runs from and writes to may itself live under one of those
# places (a checkout under /tmp: the state dir, the repo with the hardware
# manager, the agent venv): each such path is bind-mounted aside onto /dev
# (our own tmpfs) before the scratch tmpfs hides it and moved back on top of
# the tmpfs after, so the agent sees the same files wherever the checkout is.
SCRATCH=(/tmp /var/tmp /run /var/log /var/lib /etc/mdadm)
under() { [[ "$1" == "$2" || "$1" == "$2"/* ]]; } # under PATH DIR
KEEP=()
for p in "$(dirname "$(dirname "$HERE")")" "$VENV" "$D"; do
  for t in "${SCRATCH[@]}"; do
    under "$p" "$(realpath -m "$t")" || continue
    dup=""
    for k in "${KEEP[@]}"; do under "$p" "$k" && dup=1; done
    [[ -n "$dup" ]] || KEEP+=("$p")
  done
done
for i in "${!KEEP[@]}"; do
  mkdir -p "/dev/.metalflow-keep/$i"
  mount --bind "${KEEP[$i]}" "/dev/.metalflow-keep/$i"
done
for t in "${SCRATCH[@]}"; do
  [[ -d "$t" ]] || continue
  mount -t tmpfs -o mode=755 scratch "$t"
done
for i in "${!KEEP[@]}"; do
  mkdir -p "${KEEP[$i]}"
  mount --move "/dev/.metalflow-keep/$i" "${KEEP[$i]}"
  mount -o remount,bind,ro "${KEEP[$i]}"
done
rm -rf /dev/.metalflow-keep
# IPA runs `mdadm --assemble --scan` at every start. Left to its default,
# mdadm reads the kernel's whole partition list (/proc/partitions: the
# machine's disks too) and opens each entry through a device node it makes
# for it, past the /dev above. Its config file (on the scratch tmpfs) limits
# every scan to this host's loop devices and the arrays built on them.
if command -v mdadm >/dev/null; then
  [[ -d /etc/mdadm ]] || die "mdadm is installed but /etc/mdadm is missing: cannot limit its device scan"
  printf 'DEVICE /dev/loop* /dev/md*\n' >/etc/mdadm/mdadm.conf
fi
mount -o remount,bind,ro / || die "could not make / read-only"
mount --bind "$D" "$D"
mount -o remount,bind,rw "$D"

export PATH="$D/scratch/shims:$PATH"
export METALFLOW_AGENT_DISKS
# IPA logs its agent token twice over: its configuration dump at start (`agent_token = ...`) and the
# access log line of every command Ironic sends (`?agent_token=...`). The log is written through sed,
# which masks both, so the token the state dir's log holds is never the live one.
exec "$VENV/bin/ironic-python-agent" --config-file "$D/ipa.conf" > >(exec sed -u -E "$IPA_LOG_REDACT" >>"$D/ipa.log") 2>&1
