#!/usr/bin/env bash
# make demo: the local stack, a worker and the API, then scripts/demo.ts drives
# hosts through the API. Runs until Ctrl-C, which stops the worker and the API;
# the stack keeps its data and keeps running (make stack-down stops it).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
export METALFLOW_STATE_DIR=${METALFLOW_STATE_DIR:-$ROOT/.state/stack}
RUN=$METALFLOW_STATE_DIR/run
mkdir -p "$RUN"
alive() { [ -f "$RUN/$1.pid" ] && kill -0 "$(cat "$RUN/$1.pid")" 2>/dev/null; }

# The agent path (docs/agent-path.md, "In the demo"): as root, the Redfish host redfish-agent is provisioned
# by a real ironic-python-agent; the stack's Ironic and sushy get the agent path's settings for it.
# shellcheck source=scripts/lib/demo-agent.sh
source scripts/lib/demo-agent.sh
AGENT_SKIPPED=$(demo_agent_unavailable)
[ -n "$AGENT_SKIPPED" ] || demo_agent_env

bash scripts/stack.sh start
eval "$(bash scripts/stack.sh env)"
[ -n "$AGENT_SKIPPED" ] || demo_agent_stack
# The IPMI BMC of the demo's direct-provisioner host (the stack's sushy is its Redfish one).
export IPMI_SIM_PORT=${IPMI_SIM_PORT:-6623}
bash scripts/ipmi-sim.sh start
export METALFLOW_API_PORT=${METALFLOW_API_PORT:-8080}
export METALFLOW_API_URL=http://127.0.0.1:$METALFLOW_API_PORT
# DHCP (docs/dhcp-and-ipam.md): the demo site's dnsmasq in a network namespace, the fake hosts'
# addresses claimed from an IPPool and reserved there. Needs root (network namespaces), dnsmasq and busybox.
if [ "$(id -u)" = 0 ] && command -v dnsmasq >/dev/null && command -v busybox >/dev/null &&
  DHCP_SITE=demo DHCP_NET=${DEMO_DHCP_NET:-10.251.0} DHCP_NETNS=${DEMO_DHCP_NETNS:-mf-dhcp-demo} bash scripts/dnsmasq.sh start; then
  export METALFLOW_DHCP_SITES=demo=$METALFLOW_STATE_DIR/dnsmasq/demo METALFLOW_DEMO_DHCP_NET=${DEMO_DHCP_NET:-10.251.0}
  export METALFLOW_DEMO_DHCP_NETNS=${DEMO_DHCP_NETNS:-mf-dhcp-demo}
  # The demo's hosts read their leases every 5 s (60 s by default), so status.dhcp shows them at once.
  export METALFLOW_DHCP_LEASE_CHECK_SECONDS=${METALFLOW_DHCP_LEASE_CHECK_SECONDS:-5}
else
  echo "DHCP part of the demo skipped: it needs root, dnsmasq and busybox (scripts/install.sh installs the packages)"
fi
# shellcheck source=scripts/lib/demo-codec.sh
source scripts/lib/demo-codec.sh
demo_keys_and_token

start_cmd() {
  local name=$1; shift
  if alive "$name"; then echo "$name already running (pid $(cat "$RUN/$name.pid"))"; return; fi
  # Its own session: a Ctrl-C in the terminal reaches this script only, whose trap stops the processes in order.
  setsid "$@" >"$RUN/$name.log" 2>&1 &
  echo $! >"$RUN/$name.pid"
  echo "started $name (pid $!, log $RUN/$name.log)"
}
stop() {
  # The launcher's SIGTERM stops the agent it runs (namespaces gone, loop devices detached; the disk file is kept).
  for name in api worker codec image-origin jaeger agent-launcher; do
    if alive "$name"; then kill "$(cat "$RUN/$name.pid")" 2>/dev/null || true; fi
    rm -f "$RUN/$name.pid"
  done
  echo "stopped the worker, the API, the codec server, the image origin, Jaeger and the agent launcher; the stack is still up (make stack-down stops it)"
  exit 0
}
# From here on a Ctrl-C stops what the demo started, whichever step it interrupts.
trap stop INT TERM
# glibc arenas: 2 keep the worker ~50 MiB smaller at rest (config/env.ts RECOMMENDED_MALLOC_ARENA_MAX).
start_bg() { start_cmd "$1" env MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}" node --import tsx "$2"; }

# Images (docs/images.md): a plain static server as the image's origin, and the worker's image cache in
# front of it: the fake hosts are deployed from the cache, which fetched the image once and checked its sha256.
IMAGES=$METALFLOW_STATE_DIR/demo-images
IMAGE_NAME=demo-ubuntu-24.04.qcow2
mkdir -p "$IMAGES"
# 4 MiB with qcow2's magic: fake-hardware never boots it; the cache streams and hashes it.
[ -s "$IMAGES/$IMAGE_NAME" ] || { printf 'QFI\xfb\x00\x00\x00\x03'; head -c $((4 * 1024 * 1024 - 8)) /dev/zero; } >"$IMAGES/$IMAGE_NAME"
DEMO_IMAGE_PORT=${DEMO_IMAGE_PORT:-8082}
export METALFLOW_DEMO_IMAGE_URL=http://127.0.0.1:$DEMO_IMAGE_PORT/$IMAGE_NAME
# The image origin is on loopback, which the worker's image fetches refuse unless let through (docs/security.md, *The worker's image fetches*).
export METALFLOW_IMAGE_FETCH_ALLOW=${METALFLOW_IMAGE_FETCH_ALLOW:-127.0.0.0/8}
METALFLOW_DEMO_IMAGE_SHA256=$(sha256sum "$IMAGES/$IMAGE_NAME" | cut -d' ' -f1)
export METALFLOW_DEMO_IMAGE_SHA256
export METALFLOW_DEMO_ORIGIN_LOG=$RUN/image-origin.log
export METALFLOW_IMAGE_CACHE_DIR=${METALFLOW_IMAGE_CACHE_DIR:-$METALFLOW_STATE_DIR/image-cache}
export METALFLOW_CACHE_IMAGES=${METALFLOW_CACHE_IMAGES:-1}
start_cmd image-origin python3 -m http.server --bind 127.0.0.1 --directory "$IMAGES" "$DEMO_IMAGE_PORT"
if [ -n "$AGENT_SKIPPED" ]; then
  export METALFLOW_DEMO_AGENT_SKIPPED=$AGENT_SKIPPED
  echo "Agent path of the demo skipped (redfish-agent is not enrolled): $AGENT_SKIPPED"
else
  demo_agent_start "$IMAGES"
fi

if ! alive api && (exec 3<>"/dev/tcp/127.0.0.1/$METALFLOW_API_PORT") 2>/dev/null; then
  echo "error: port $METALFLOW_API_PORT (metalflow API) is in use by another program; set METALFLOW_API_PORT" >&2
  exit 1
fi
# The demo's own Worker Deployment and build id: the stack outlives commits, and a new commit's build id
# would not be current there (docs/operations.md, "Upgrading workers").
export METALFLOW_WORKER_DEPLOYMENT=${METALFLOW_WORKER_DEPLOYMENT:-metalflow-demo} METALFLOW_WORKER_BUILD_ID=${METALFLOW_WORKER_BUILD_ID:-demo}
# shellcheck source=scripts/lib/demo-metrics.sh
source scripts/lib/demo-metrics.sh
demo_metrics_port METALFLOW_WORKER_METRICS_PORT 9464 worker "$(alive worker && echo running)"
# shellcheck source=scripts/lib/demo-traces.sh
source scripts/lib/demo-traces.sh
demo_start_traces "$RUN"
start_bg worker workers/main.ts
start_bg api api/main.ts

for _ in $(seq 1 60); do
  if curl -sf "$METALFLOW_API_URL/healthz" >/dev/null; then break; fi
  if ! alive api; then echo "error: the API exited; its log:" >&2; tail -20 "$RUN/api.log" >&2; exit 1; fi
  sleep 0.5
done
curl -sf "$METALFLOW_API_URL/healthz" >/dev/null || { echo "error: the API did not answer on $METALFLOW_API_URL" >&2; exit 1; }
if ! alive worker; then echo "error: the worker exited; its log:" >&2; tail -20 "$RUN/worker.log" >&2; exit 1; fi

demo_start_codec "$RUN"

node --import tsx scripts/demo.ts
demo_print_cli "$ROOT" host/demo/fake-0
demo_print_metrics
demo_print_traces

echo "Running. Press Ctrl-C to stop the worker and the API."
while alive api && alive worker; do sleep 1; done
for name in worker api; do alive "$name" || echo "the $name stopped on its own (not by Ctrl-C): its log is $RUN/$name.log" >&2; done
stop
