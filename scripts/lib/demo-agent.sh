# shellcheck shell=bash
# The demo's agent path (docs/agent-path.md, "In the demo"): the demo's Redfish host redfish-agent is
# provisioned through a real ironic-python-agent, booted from the virtual CD Ironic inserts, writing onto a
# loop device. The agent lab's own pieces: scripts/stack.sh's IRONIC_AGENT_PATH=1 settings (the demo's one
# Ironic serves its fake-hardware hosts and this Redfish host alike), scripts/agent/launcher.py (boots the
# agent while sushy says the system is on and booting the CD) and scripts/agent/ipa-host.sh (the agent fenced
# into namespaces of its own). Root only. Sourced by scripts/demo.sh: uses its ROOT, RUN, METALFLOW_STATE_DIR,
# DEMO_IMAGE_PORT, start_cmd and alive, and the stack's env (IRONIC_URL, IRONIC_HTTP_URL, SUSHY_URL).

# ipa-host.sh's name for the host: its network namespace is mfagent-demo-redfish-agent (the agent tests'
# hosts are ap-*, af-* and live-*).
DEMO_AGENT_HOST=demo-redfish-agent
# The sushy system the demo adds to the stack's (scripts/sushy-fake-systems.json) for it.
DEMO_AGENT_SYSTEM=6d660000-0000-4000-8000-0000000000d1
DEMO_AGENT_MAC=52:54:00:6d:66:d1
DEMO_AGENT_DIR=$METALFLOW_STATE_DIR/demo-agent
# Where sushy notifies the launcher, and where the agent's API is bridged while it runs.
DEMO_AGENT_NOTIFY_PORT=${DEMO_AGENT_NOTIFY_PORT:-8086}
DEMO_AGENT_API_PORT=${DEMO_AGENT_API_PORT:-8087}

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Why the demo cannot run its agent path here (printed), or nothing.
demo_agent_unavailable() {
  if [ "$(id -u)" != 0 ]; then echo "it needs root (network and mount namespaces, loop devices)"; return; fi
  local venv=${METALFLOW_AGENT_VENV:-$ROOT/.venv-ipa} t
  [ -x "$venv/bin/ironic-python-agent" ] || { echo "$venv/bin/ironic-python-agent is missing (scripts/install.sh installs it)"; return; }
  # The agent's tools (scripts/apt-packages.txt), Ironic's ISO builder, and what builds and shows the demo's disk.
  for t in socat qemu-img sgdisk losetup unshare mkfs.vfat mkisofs mkfs.ext4 partx isoinfo; do
    command -v "$t" >/dev/null || { echo "$t is missing (scripts/apt-packages.txt; mkfs.ext4: e2fsprogs)"; return; }
  done
  if ! alive agent-launcher && port_busy "$DEMO_AGENT_NOTIFY_PORT"; then
    echo "port $DEMO_AGENT_NOTIFY_PORT (the agent launcher's) is in use by another program; set DEMO_AGENT_NOTIFY_PORT"; return
  fi
  # The agent's API is bridged to this port only while the agent runs (ipa-host.sh).
  if ! METALFLOW_AGENT_STATE=$DEMO_AGENT_DIR/hosts bash scripts/agent/ipa-host.sh status "$DEMO_AGENT_HOST" 2>/dev/null && port_busy "$DEMO_AGENT_API_PORT"; then
    echo "port $DEMO_AGENT_API_PORT (the agent's API) is in use by another program; set DEMO_AGENT_API_PORT"; return
  fi
}

# Before the stack starts: the stack's settings for the agent path, and sushy's systems with the demo's host.
demo_agent_env() {
  mkdir -p "$DEMO_AGENT_DIR"
  python3 - "$ROOT/scripts/sushy-fake-systems.json" "$DEMO_AGENT_DIR/systems.json" "$DEMO_AGENT_SYSTEM" "$DEMO_AGENT_MAC" <<'EOF'
import json, sys
src, dst, uuid, mac = sys.argv[1:5]
systems = [s for s in json.load(open(src)) if s["uuid"] != uuid]
# external_notifier: sushy PUTs this system's state to the launcher on every change (docs/agent-path.md).
systems.append({"uuid": uuid, "name": "mf-demo-agent", "power_state": "Off", "external_notifier": True,
                "nics": [{"mac": mac, "ip": "192.0.2.21"}], "memory_gb": 4,
                "processors": {"sockets": 1, "model": "metalflow demo host", "vendor": "metalflow", "cores": 2, "threads": 2},
                # The 8 GiB sparse file the agent writes to (ipa-host.sh --disks 8G).
                "disks": [{"id": "Disk0", "name": "loop0", "capacity_bytes": 8 * 2**30, "protocol": "SATA"}]})
text = json.dumps(systems, indent=2) + "\n"
try:
    same = open(dst).read() == text
except OSError:
    same = False
if not same:
    open(dst, "w").write(text)
EOF
  export IRONIC_AGENT_PATH=1 SUSHY_SYSTEMS_FILE=$DEMO_AGENT_DIR/systems.json
  export SUSHY_EXTERNAL_NOTIFICATION_URL=http://127.0.0.1:$DEMO_AGENT_NOTIFY_PORT/
  # As the agent tests' labs: Ironic asks each second, not every 6 and 5 s, whether the agent's last command
  # finished and whether the host went off after the agent's power off (some 9 s of every deploy).
  export IRONIC_AGENT_COMMAND_WAIT_INTERVAL=${IRONIC_AGENT_COMMAND_WAIT_INTERVAL:-1}
  export IRONIC_AGENT_POWER_OFF_POLL_INTERVAL=${IRONIC_AGENT_POWER_OFF_POLL_INTERVAL:-1}
}

# After `stack.sh start`: a stack that was already running without those settings (`make stack-up`, an older
# demo) gets them: Ironic and sushy restarted, Ironic's database and sushy's power and media state kept.
demo_agent_stack() {
  local s=$METALFLOW_STATE_DIR stale=()
  grep -q '^deploy_kernel = ' "$s/ironic/ironic.conf" 2>/dev/null \
    && grep -qx "command_wait_interval = $IRONIC_AGENT_COMMAND_WAIT_INTERVAL" "$s/ironic/ironic.conf" || stale+=(ironic)
  grep -qF "EXTERNAL_NOTIFICATION_URL = '$SUSHY_EXTERNAL_NOTIFICATION_URL'" "$s/sushy/sushy.conf" 2>/dev/null \
    && grep -qF "open('$SUSHY_SYSTEMS_FILE')" "$s/sushy/sushy.conf" || stale+=(sushy)
  if [ "${#stale[@]}" -gt 0 ]; then
    echo "agent path: restarting ${stale[*]} with its settings (their data is kept)"
    bash scripts/stack.sh restart "${stale[@]}"
  fi
}

# The whole-disk image the agent writes: a GPT and one ext4 partition (label demo-root) holding a README.
demo_agent_image() {
  local img=$1/demo-agent-disk.qcow2 tmp
  [ -s "$img" ] && return 0
  tmp=$(mktemp -d)
  mkdir -p "$tmp/root/etc"
  echo redfish-agent >"$tmp/root/etc/hostname"
  printf 'The metalflow demo image: ironic-python-agent wrote it onto redfish-agent'"'"'s disk.\n' >"$tmp/root/README"
  truncate -s 30M "$tmp/root.ext4"
  mkfs.ext4 -q -F -L demo-root -d "$tmp/root" "$tmp/root.ext4"
  truncate -s 32M "$tmp/disk.raw"
  # Partition 1 from 1 MiB to 31 MiB; the backup GPT in the last MiB.
  sgdisk -n 1:2048:63487 -c 1:demo-root "$tmp/disk.raw" >/dev/null
  [ "$(partx -g -o START "$tmp/disk.raw" 2>/dev/null | tr -d " ")" = 2048 ] || { echo "error: could not partition the demo image (sgdisk)" >&2; rm -rf "$tmp"; return 1; }
  dd if="$tmp/root.ext4" of="$tmp/disk.raw" bs=1M seek=1 conv=notrunc status=none
  qemu-img convert -f raw -O qcow2 "$tmp/disk.raw" "$img.tmp"
  mv -f "$img.tmp" "$img"
  rm -rf "$tmp"
}

# The launcher (notifications from sushy; the stack's httpboot serves Ironic's http_root), the image, and the
# settings scripts/demo.ts reads. $1: the images folder the demo's image origin serves.
demo_agent_start() {
  local images=$1 d=$DEMO_AGENT_DIR ironic_port=${IRONIC_URL##*:} http_port=${IRONIC_HTTP_URL##*:}
  demo_agent_image "$images"
  printf '{"%s": {"name": "%s", "mac": "%s", "disks": "8G", "agentPort": %s, "withholdBoots": 0}}\n' \
    "$DEMO_AGENT_SYSTEM" "$DEMO_AGENT_HOST" "$DEMO_AGENT_MAC" "$DEMO_AGENT_API_PORT" >"$d/hosts.json"
  # What the agent may reach (bridged into its network namespace): Ironic's API, its http_root, the worker's
  # image cache (the deploy's image_source) and the image origin.
  start_cmd agent-launcher env METALFLOW_AGENT_STATE="$d/hosts" "$ROOT/.venv/bin/python" scripts/agent/launcher.py \
    --listen-port "$DEMO_AGENT_NOTIFY_PORT" --hosts "$d/hosts.json" --state "$d/launcher" --sushy-url "$SUSHY_URL" \
    --forward "$ironic_port,$http_port,${METALFLOW_IMAGE_CACHE_PORT:-8081},$DEMO_IMAGE_PORT"
  local _
  for _ in $(seq 1 40); do port_busy "$DEMO_AGENT_NOTIFY_PORT" && break; alive agent-launcher || break; sleep 0.25; done
  port_busy "$DEMO_AGENT_NOTIFY_PORT" || { echo "error: the agent launcher did not start; its log:" >&2; tail -20 "$RUN/agent-launcher.log" >&2; return 1; }
  export METALFLOW_DEMO_AGENT_SYSTEM=$DEMO_AGENT_SYSTEM METALFLOW_DEMO_AGENT_MAC=$DEMO_AGENT_MAC
  export METALFLOW_DEMO_AGENT_DIR=$d METALFLOW_DEMO_AGENT_DISK=$d/hosts/$DEMO_AGENT_HOST/disk0.img
  export METALFLOW_DEMO_AGENT_IMAGE_URL=http://127.0.0.1:$DEMO_IMAGE_PORT/demo-agent-disk.qcow2
  METALFLOW_DEMO_AGENT_IMAGE_SHA256=$(sha256sum "$images/demo-agent-disk.qcow2" | cut -d' ' -f1)
  export METALFLOW_DEMO_AGENT_IMAGE_SHA256
}
