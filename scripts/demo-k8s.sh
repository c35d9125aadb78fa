#!/usr/bin/env bash
# make demo-k8s: the demo in Kubernetes mode. A real kube-apiserver + etcd
# (scripts/kube.sh; the first run builds kube-apiserver, several minutes), the
# CRDs, the local stack, a worker in Kubernetes mode (Secrets from Kubernetes,
# status written back), the controller, and Metal3-style manifests applied with
# kubectl. Prints `kubectl get bmh` until the hosts settle, then keeps running
# until Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

bash scripts/kube-build.sh
bash scripts/kube.sh start
eval "$(bash scripts/kube.sh env)"
bash scripts/stack.sh start
eval "$(bash scripts/stack.sh env)"
export METALFLOW_STATE_DIR=${METALFLOW_STATE_DIR:-$ROOT/.state/stack}
export METALFLOW_KUBECONFIG=$KUBECONFIG
export METALFLOW_TASK_QUEUE=metalflow-k8s-demo
# The demo's images are on loopback, which the worker's image fetches refuse unless let through (docs/security.md, *The worker's image fetches*).
export METALFLOW_IMAGE_FETCH_ALLOW=${METALFLOW_IMAGE_FETCH_ALLOW:-127.0.0.0/8}
export METALFLOW_LEASE_NAMESPACE=default
RUN=$METALFLOW_STATE_DIR/run-k8s
mkdir -p "$RUN"
NS=metal3
# Payloads encrypted as in the API demo (the same key ring), read through the same codec server.
# shellcheck source=scripts/lib/demo-codec.sh
source scripts/lib/demo-codec.sh
demo_keys_and_token

kc() { "$KUBECTL" --kubeconfig "$KUBECONFIG" "$@"; }
alive() { [ -f "$RUN/$1.pid" ] && kill -0 "$(cat "$RUN/$1.pid")" 2>/dev/null; }
start_bg() {
  if alive "$1"; then echo "$1 already running (pid $(cat "$RUN/$1.pid"))"; return; fi
  # glibc arenas: 2 keep the worker ~50 MiB smaller at rest (config/env.ts RECOMMENDED_MALLOC_ARENA_MAX).
  # Its own session: a Ctrl-C in the terminal reaches this script only, whose trap stops the processes.
  MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}" setsid node --import tsx "$2" >"$RUN/$1.log" 2>&1 &
  echo $! >"$RUN/$1.pid"
  echo "started $1 (pid $!, log $RUN/$1.log)"
}

stop() {
  for name in controller worker codec; do
    if alive "$name"; then kill "$(cat "$RUN/$name.pid")" 2>/dev/null || true; fi
    rm -f "$RUN/$name.pid"
  done
  echo "stopped the controller, the worker and the codec server; the stack and kube-apiserver keep running (make stack-down stops both)"
  exit 0
}
# From here on a Ctrl-C stops what the demo started, whichever step it interrupts.
trap stop INT TERM
kc apply -f k8s/crds >/dev/null
kc wait --for=condition=Established --timeout=60s crd/baremetalhosts.metal3.io crd/hardwaredata.metal3.io >/dev/null
kc get namespace "$NS" >/dev/null 2>&1 || kc create namespace "$NS" >/dev/null
# shellcheck source=scripts/lib/demo-metrics.sh
source scripts/lib/demo-metrics.sh
demo_metrics_port METALFLOW_WORKER_METRICS_PORT 9466 worker "$(alive worker && echo running)"
demo_metrics_port METALFLOW_CONTROLLER_METRICS_PORT 9465 controller "$(alive controller && echo running)"
start_bg worker workers/main.ts
start_bg controller k8s/controller/main.ts
demo_start_codec "$RUN"

# Metal3's user-guide shape; the BMC addresses are metalflow's fake:// (Ironic
# fake-hardware), the only BMCs a loopback demo can really drive to provisioned.
for i in 0 1 2; do
  image=""
  if [ "$i" -lt 2 ]; then
    image="  image:
    url: http://127.0.0.1/images/demo-ubuntu-24.04.qcow2
    checksum: 9f0cc3d3b2f35dd1c8dc8a9c76c5c3f7b1a2f2c4a1d4e2b7a0c8f6e5d4c3b2a1
    checksumType: sha256
    format: qcow2
  userData:
    name: worker-$i-user-data"
  fi
  kc apply -n "$NS" -f - >/dev/null <<YAML
apiVersion: v1
kind: Secret
metadata:
  name: worker-$i-bmc-secret
type: Opaque
stringData:
  username: admin
  password: password
---
apiVersion: v1
kind: Secret
metadata:
  name: worker-$i-user-data
type: Opaque
stringData:
  userData: |
    #cloud-config
    hostname: worker-$i
---
apiVersion: metal3.io/v1alpha1
kind: BareMetalHost
metadata:
  name: worker-$i
spec:
  online: true
  bootMACAddress: 52:54:00:4b:00:0$i
  bmc:
    address: fake://worker-$i
    credentialsName: worker-$i-bmc-secret
$image
YAML
done

for _ in $(seq 1 120); do
  out=$(kc get bmh -n "$NS")
  if [ "$out" != "${last:-}" ]; then echo; echo "$out"; last=$out; fi
  if [ "$(kc get bmh -n "$NS" -o jsonpath='{range .items[*]}{.status.provisioning.state}{"\n"}{end}' | sort | uniq -c | tr -s ' ')" = " 1 available
 2 provisioned" ]; then break; fi
  alive worker || { echo "the worker exited: $RUN/worker.log" >&2; exit 1; }
  alive controller || { echo "the controller exited: $RUN/controller.log" >&2; exit 1; }
  sleep 1
done
echo
# Without KUBECONFIG, kubectl asks localhost:8080, which is the metalflow API in the API demo: say which cluster this is.
echo "kubectl:     export KUBECONFIG=$KUBECONFIG"
echo "             (or eval \"\$(bash scripts/kube.sh env)\": that and the built kubectl on PATH), then: kubectl get bmh -n $NS"
echo "Temporal UI: ${TEMPORAL_UI_URL:-http://127.0.0.1:8233}/namespaces/default/workflows?query=MetalflowHostNamespace%3D%22$NS%22"
demo_print_cli "$ROOT" "host/$NS/worker-0"
demo_print_metrics

echo "Running. Press Ctrl-C to stop the controller and the worker."
while alive worker && alive controller; do sleep 1; done
for name in worker controller; do alive "$name" || echo "the $name stopped on its own (not by Ctrl-C): its log is $RUN/$name.log" >&2; done
stop
