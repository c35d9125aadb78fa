# shellcheck shell=bash
# The demos' Prometheus endpoints (docs/observability.md): on by default, on
# fixed ports so a scrape config can name them. `make demo`: the worker on
# 9464; `make demo-k8s`: the controller on 9465 and its worker on 9466 (both
# demos may run at once). A port set by the caller wins; a taken one stops
# the demo before anything starts rather than leaving a process without metrics.

# demo_metrics_port VAR DEFAULT WHAT [running]: exports VAR (DEFAULT unless set) and, unless the process
# is already running (then it holds the port), checks the port is free.
demo_metrics_port() {
  local var=$1 default=$2 what=$3 running=${4:-}
  export "$var=${!var:-$default}"
  if [ -z "$running" ] && (exec 3<>"/dev/tcp/127.0.0.1/${!var}") 2>/dev/null; then
    echo "error: port ${!var} ($what metrics) is in use by another program; set $var" >&2
    return 1
  fi
}

# demo_print_metrics: the endpoints that are on, and where the scrape config and dashboard are.
demo_print_metrics() {
  local host=${METALFLOW_METRICS_HOST:-127.0.0.1}
  echo "Metrics:     ${METALFLOW_WORKER_METRICS_PORT:+worker http://$host:$METALFLOW_WORKER_METRICS_PORT/metrics }${METALFLOW_CONTROLLER_METRICS_PORT:+controller http://$host:$METALFLOW_CONTROLLER_METRICS_PORT/metrics}"
  echo "             (Prometheus scrape config and Grafana dashboard: docs/observability.md, docs/grafana-dashboard.json)"
}
