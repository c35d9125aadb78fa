# shellcheck shell=bash
# The demo's traces (docs/observability.md): when Jaeger is built (scripts/jaeger.sh install;
# `make install` and `make test` build it, `make demo` does not wait for it) and no collector
# is set, the demo runs Jaeger on loopback (OTLP/HTTP on 4318, its query API on 16686, the
# ports Jaeger uses by default; DEMO_OTLP_PORT / DEMO_JAEGER_PORT change them) and points the
# worker and the API at it. METALFLOW_OTLP_ENDPOINT set by the caller wins: no Jaeger is started.

# demo_start_traces RUN_DIR: exports METALFLOW_OTLP_ENDPOINT when traces are on.
demo_start_traces() {
  local run=$1
  export DEMO_JAEGER_URL=
  if [ -n "${METALFLOW_OTLP_ENDPOINT:-${OTEL_EXPORTER_OTLP_ENDPOINT:-}}" ]; then return 0; fi
  if ! bash scripts/jaeger.sh path >/dev/null 2>&1; then
    echo "Traces off: Jaeger is not built (bash scripts/jaeger.sh install, a few minutes once; or set METALFLOW_OTLP_ENDPOINT to a collector)"
    return 0
  fi
  local otlp=${DEMO_OTLP_PORT:-4318} query=${DEMO_JAEGER_PORT:-16686}
  if ! alive jaeger; then
    for p in "$otlp" "$query"; do
      if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
        echo "Traces off: port $p is in use by another program (set DEMO_OTLP_PORT / DEMO_JAEGER_PORT)"
        return 0
      fi
    done
    start_cmd jaeger bash scripts/jaeger.sh run "$run/jaeger" "$otlp" "$query"
  fi
  export METALFLOW_OTLP_ENDPOINT=http://127.0.0.1:$otlp
  export DEMO_JAEGER_URL=http://127.0.0.1:$query
}

# demo_print_traces: how to see a trace.
demo_print_traces() {
  [ -n "${METALFLOW_OTLP_ENDPOINT:-}" ] || return 0
  if [ -n "$DEMO_JAEGER_URL" ]; then
    echo "Traces:      Jaeger at $DEMO_JAEGER_URL; each API answer names its trace in the x-trace-id header:"
    echo "             curl -s $DEMO_JAEGER_URL/api/traces/<x-trace-id> | jq '.data[0].spans[].operationName'"
  else
    echo "Traces:      sent to $METALFLOW_OTLP_ENDPOINT; each API answer names its trace in the x-trace-id header"
  fi
}
