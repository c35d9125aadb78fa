#!/usr/bin/env bash
# Jaeger (v2, the "all-in-one" binary built on the OpenTelemetry Collector), the trace
# backend of the tracing test and of the demo (docs/observability.md). Built from Go
# modules, as kube-apiserver is: no container, no download from GitHub.
#
#   scripts/jaeger.sh install            build it once into .cache/jaeger/<version>/jaeger (cached)
#   scripts/jaeger.sh path               print the binary's path (exit 1 when not built)
#   scripts/jaeger.sh run DIR OTLP_HTTP_PORT QUERY_PORT
#                                        run it on 127.0.0.1 with in-memory storage, the
#                                        config written to DIR (what the test and demo do)
#
# Environment: METALFLOW_JAEGER_VERSION (default v1.76.0: the Go module version of the
# Jaeger v2 release), GO (go binary, default `go`), GOPROXY as usual.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VERSION="${METALFLOW_JAEGER_VERSION:-v1.76.0}"
DIR="$REPO/.cache/jaeger/$VERSION"
BIN="$DIR/jaeger"
GO="${GO:-go}"
log() { printf '[jaeger] %s\n' "$*"; }

# Everything runs from main, parsed in full before it starts: editing this file during a build cannot derail it.
main() {
case "${1:-}" in
  install)
    if [[ -x "$BIN" ]]; then log "ok ($BIN)"; exit 0; fi
    # Without a Go on PATH, the one scripts/kube-build.sh fetches from the Go module proxy (once, cached).
    command -v "$GO" >/dev/null || GO="$(bash "$REPO/scripts/kube-build.sh" --go | tail -1)" || { log "no Go found or fetched"; exit 1; }
    mkdir -p "$DIR"
    # A throwaway module that only pins the tool: `go get -tool` resolves Jaeger's whole
    # dependency graph at the versions its release tested.
    mod="$DIR/mod"
    rm -rf "$mod"; mkdir -p "$mod"
    start=$SECONDS
    log "building github.com/jaegertracing/jaeger/cmd/jaeger@$VERSION with $("$GO" env GOVERSION) (the first build downloads modules and takes a few minutes)"
    (
      cd "$mod"
      export GOTOOLCHAIN=local GOFLAGS="-mod=mod -buildvcs=false" CGO_ENABLED=0
      "$GO" mod init metalflow.local/jaeger-build >/dev/null 2>&1
      "$GO" get -tool "github.com/jaegertracing/jaeger/cmd/jaeger@$VERSION"
      "$GO" build -trimpath -ldflags "-s -w" -o "$BIN.tmp.$$" github.com/jaegertracing/jaeger/cmd/jaeger
    ) || { rm -f "$BIN.tmp.$$"; log "go build failed (Go module proxy reachable? see above)"; exit 1; }
    mv -f "$BIN.tmp.$$" "$BIN"
    printf 'version=%s\ngo=%s\nbuild_seconds=%s\n' "$VERSION" "$("$GO" env GOVERSION)" "$((SECONDS - start))" >"$BIN.build-info"
    log "ok ($BIN, built in $((SECONDS - start)) s)"
    ;;
  path)
    [[ -x "$BIN" ]] || { log "not built: bash scripts/jaeger.sh install" >&2; exit 1; }
    echo "$BIN"
    ;;
  run)
    [[ -x "$BIN" ]] || { log "not built: bash scripts/jaeger.sh install"; exit 1; }
    [[ $# -eq 4 ]] || { log "usage: scripts/jaeger.sh run DIR OTLP_HTTP_PORT QUERY_PORT"; exit 2; }
    out="$2" otlp="$3" query="$4"
    mkdir -p "$out"
    # Jaeger's default all-in-one config listens on every interface and on fixed ports;
    # this one keeps everything on loopback and on the caller's ports.
    cat >"$out/jaeger.yaml" <<YAML
service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    logs:
      level: warn
    metrics:
      level: none
extensions:
  jaeger_query:
    storage:
      traces: memstore
    http:
      endpoint: 127.0.0.1:$query
    grpc:
      endpoint: 127.0.0.1:0
  jaeger_storage:
    backends:
      memstore:
        memory:
          max_traces: 10000
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:$otlp
processors:
  batch:
    timeout: 200ms
exporters:
  jaeger_storage_exporter:
    trace_storage: memstore
YAML
    exec "$BIN" --config "$out/jaeger.yaml"
    ;;
  *)
    sed -n '2,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
}

main "$@"
