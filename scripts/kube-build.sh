#!/usr/bin/env bash
# Build the Kubernetes control plane that scripts/kube.sh runs, from Go
# modules, once per machine: kube-apiserver and kubectl from the pinned
# k8s.io/kubernetes release (wrapper module k8s/apiserver), etcd from the
# pinned go.etcd.io/etcd/server/v3 release (wrapper module k8s/etcd).
#
# Binaries go to an ignored cache folder and are rebuilt only when missing or
# when their wrapper module changed (go.mod, go.sum, *.go; hashed in a stamp):
#   .cache/kube/<kubernetes version>/kube-apiserver, kubectl
#   .cache/kube/etcd-<etcd version>/etcd
# Each build's duration is recorded next to the binary (<binary>.build-info)
# and printed. A fresh build on a 2-core machine takes several minutes (see
# k8s/README.md); later runs return at once.
#
# Usage: scripts/kube-build.sh [--force] [BINARY ...]   build what is missing
#                                                      (kube-apiserver kubectl etcd)
#        scripts/kube-build.sh --paths     print NAME=path lines (no build)
#        scripts/kube-build.sh --check     exit 0 only when all are built and current
#        scripts/kube-build.sh --tidy      go mod tidy both wrapper modules
#                                          (after changing a pinned version)
#        scripts/kube-build.sh --go        print the go binary the build would use
#                                          (fetching a toolchain if needed)
# Environment: METALFLOW_KUBE_CACHE (default <repo>/.cache/kube), GO (go
# binary, default `go` on PATH), GOPROXY / GOFLAGS as usual (-mod=mod is added).
# Without a Go >= 1.26 on PATH, the Go toolchain METALFLOW_GO_TOOLCHAIN
# (default go1.26.8) is fetched once from the Go module proxy (module
# golang.org/toolchain, as `go` itself does) into the cache;
# METALFLOW_GO_BOOTSTRAP=0 turns that off.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="${METALFLOW_KUBE_CACHE:-$REPO/.cache/kube}"
GO="${GO:-go}"
APISERVER_MOD="$REPO/k8s/apiserver"
ETCD_MOD="$REPO/k8s/etcd"
ALL=(kube-apiserver kubectl etcd)
# Go toolchain fetched when no Go >= the go directive is installed.
GO_TOOLCHAIN="${METALFLOW_GO_TOOLCHAIN:-go1.26.8}"
GO_BOOTSTRAP="$CACHE/$GO_TOOLCHAIN"

log() { printf '[kube-build] %s\n' "$*"; }
die() { printf '[kube-build] ERROR: %s\n' "$*" >&2; exit 1; }

# Version of a required module, read from a wrapper's go.mod.
required_version() {
  local gomod="$1" module="$2" v
  v="$(awk -v m="$module" '$1 == m && $2 ~ /^v[0-9]/ { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' "$gomod")"
  [[ -n "$v" ]] || die "$gomod does not require $module"
  printf '%s\n' "$v"
}

KUBE_VERSION="$(required_version "$APISERVER_MOD/go.mod" k8s.io/kubernetes)"
ETCD_VERSION="$(required_version "$ETCD_MOD/go.mod" go.etcd.io/etcd/server/v3)"
KUBE_DIR="$CACHE/$KUBE_VERSION"
ETCD_DIR="$CACHE/etcd-$ETCD_VERSION"

path_of() {
  case "$1" in
    kube-apiserver) echo "$KUBE_DIR/kube-apiserver" ;;
    kubectl) echo "$KUBE_DIR/kubectl" ;;
    etcd) echo "$ETCD_DIR/etcd" ;;
    *) die "unknown binary '$1' (kube-apiserver, kubectl, etcd)" ;;
  esac
}

# Wrapper module dir and package (relative to it) of a binary.
module_of() { case "$1" in etcd) echo "$ETCD_MOD" ;; *) echo "$APISERVER_MOD" ;; esac; }
package_of() { case "$1" in kube-apiserver) echo . ;; kubectl) echo ./kubectl ;; etcd) echo . ;; esac; }

# Hash of everything the binary is built from (the wrapper module's files).
input_hash() {
  local mod; mod="$(module_of "$1")"
  (cd "$mod" && find . -name '*.go' -o -name go.mod -o -name go.sum | LC_ALL=C sort | xargs cat; echo "binary=$1") \
    | sha256sum | cut -d' ' -f1
}

current() {
  local bin; bin="$(path_of "$1")"
  [[ -x "$bin" && -f "$bin.stamp" && "$(cat "$bin.stamp")" == "$(input_hash "$1")" ]]
}

check_go() {
  local have need
  need="$(awk '$1 == "go" { print $2; exit }' "$APISERVER_MOD/go.mod")"
  if command -v "$GO" >/dev/null 2>&1 && have="$("$GO" env GOVERSION 2>/dev/null | sed 's/^go//')" && [[ -n "$have" ]] \
     && [[ "$(printf '%s\n%s\n' "$need" "${have%%[-+ ]*}" | sort -V | head -1)" == "$need" ]]; then
    return 0
  fi
  if [[ -x "$GO_BOOTSTRAP/bin/go" ]]; then
    GO="$GO_BOOTSTRAP/bin/go"
    return 0
  fi
  if [[ "${METALFLOW_GO_BOOTSTRAP:-1}" != 1 ]]; then
    die "Go >= $need is needed to build Kubernetes $KUBE_VERSION (go directive of its go.mod); found: ${have:-none}. Install it (https://go.dev/dl/; Debian 12's golang-go is 1.19) or unset METALFLOW_GO_BOOTSTRAP=0"
  fi
  log "Go >= $need not found (found: ${have:-none}; Debian 12's golang-go is 1.19): fetching $GO_TOOLCHAIN"
  bootstrap_go
  GO="$GO_BOOTSTRAP/bin/go"
}

# The Go toolchain is published as a Go module (golang.org/toolchain) on the
# module proxy; that is where `go` itself gets toolchains (GOTOOLCHAIN). Fetch
# that module's zip and unpack it under the cache.
bootstrap_go() {
  local arch proxy url zip tmpd
  case "$(uname -m)" in
    x86_64) arch=amd64 ;; aarch64|arm64) arch=arm64 ;;
    *) die "no Go toolchain download for $(uname -m); install Go >= 1.26 by hand" ;;
  esac
  proxy="${GOPROXY:-https://proxy.golang.org}"; proxy="${proxy%%[,|]*}"
  [[ "$proxy" == http* ]] || proxy=https://proxy.golang.org
  url="$proxy/golang.org/toolchain/@v/v0.0.1-$GO_TOOLCHAIN.linux-$arch.zip"
  mkdir -p "$CACHE"
  tmpd="$(mktemp -d "$CACHE/go-bootstrap.XXXXXX")"
  zip="$tmpd/toolchain.zip"
  if command -v curl >/dev/null 2>&1; then
    curl -fsSL --retry 3 -o "$zip" "$url" || { rm -rf "$tmpd"; die "could not download $url"; }
  else
    node -e 'fetch(process.argv[1]).then(async (r) => { if (!r.ok) throw new Error(`HTTP ${r.status}`); require("fs").writeFileSync(process.argv[2], Buffer.from(await r.arrayBuffer())); }).catch((e) => { console.error(String(e)); process.exit(1); })' "$url" "$zip" \
      || { rm -rf "$tmpd"; die "could not download $url"; }
  fi
  python3 -m zipfile -e "$zip" "$tmpd/x" || { rm -rf "$tmpd"; die "could not unpack $zip"; }
  local root="$tmpd/x/golang.org/toolchain@v0.0.1-$GO_TOOLCHAIN.linux-$arch"
  [[ -f "$root/bin/go" ]] || { rm -rf "$tmpd"; die "unexpected layout in $url (no bin/go)"; }
  # zipfile does not keep modes: the binaries must be executable.
  chmod +x "$root"/bin/* "$root"/pkg/tool/*/* 2>/dev/null || true
  rm -rf "$GO_BOOTSTRAP"
  mv "$root" "$GO_BOOTSTRAP"
  rm -rf "$tmpd"
  "$GO_BOOTSTRAP/bin/go" version >/dev/null 2>&1 || die "$GO_BOOTSTRAP/bin/go does not run"
  log "using $("$GO_BOOTSTRAP/bin/go" version) from $GO_BOOTSTRAP"
}

go_env() {
  # GOTOOLCHAIN=local: never download another Go toolchain behind our back.
  # -mod=mod: fill in go.sum entries a new Go version may want.
  env GOTOOLCHAIN=local GOFLAGS="-mod=mod -buildvcs=false${GOFLAGS:+ $GOFLAGS}" CGO_ENABLED=0 "$GO" "$@"
}

ldflags_of() {
  case "$1" in
    etcd) echo "-s -w" ;;
    *)
      local v="${KUBE_VERSION#v}" date pkg flags="-s -w"
      date="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
      # What hack/lib/version.sh sets, so /version and `kubectl version`
      # report the release (the apiserver also derives its binary version
      # for compatibility-version checks from it).
      for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        flags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=${v%%.*}"
        flags+=" -X $pkg.gitMinor=$(echo "$v" | cut -d. -f2) -X $pkg.gitTreeState=clean -X $pkg.buildDate=$date"
      done
      echo "$flags" ;;
  esac
}

fmt_duration() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

build_one() {
  local name="$1" bin mod pkg start secs tmp
  bin="$(path_of "$name")"; mod="$(module_of "$name")"; pkg="$(package_of "$name")"
  mkdir -p "$(dirname "$bin")"
  tmp="$bin.tmp.$$"
  log "$name: building from $(basename "$mod") ($(version_of "$name")) with $("$GO" env GOVERSION); the first build downloads modules and takes minutes"
  start=$SECONDS
  if ! (cd "$mod" && go_env build -trimpath -ldflags "$(ldflags_of "$name")" -o "$tmp" "$pkg"); then
    rm -f "$tmp"
    die "$name: go build failed (see above). Module download errors mean the Go module proxy ($("$GO" env GOPROXY)) is unreachable"
  fi
  secs=$((SECONDS - start))
  mv -f "$tmp" "$bin"
  input_hash "$name" >"$bin.stamp"
  printf 'binary=%s\nversion=%s\ngo=%s\nbuilt_at=%s\nbuild_seconds=%s\nbuild_time=%s\nhost_cpus=%s\n' \
    "$name" "$(version_of "$name")" "$("$GO" env GOVERSION)" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
    "$secs" "$(fmt_duration "$secs")" "$(nproc 2>/dev/null || echo '?')" >"$bin.build-info"
  log "$name: built $bin in $(fmt_duration "$secs")"
}

version_of() { case "$1" in etcd) echo "$ETCD_VERSION" ;; *) echo "$KUBE_VERSION" ;; esac; }

built_note() {
  local bin; bin="$(path_of "$1")"
  if [[ -f "$bin.build-info" ]]; then
    sed -n 's/^build_time=//p' "$bin.build-info" | head -1
  else
    echo "?"
  fi
}

# Everything below runs from main, parsed in full before it starts, so that
# editing this file while a long build runs cannot derail the running copy.
main() {
  FORCE=0 MODE=build SELECTED=()
  for arg in "$@"; do
    case "$arg" in
      --force) FORCE=1 ;;
      --paths) MODE=paths ;;
      --check) MODE=check ;;
      --tidy) MODE=tidy ;;
      --go) MODE=go ;;
      -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;;
      kube-apiserver|kubectl|etcd) SELECTED+=("$arg") ;;
      *) die "unknown argument: $arg (see --help)" ;;
    esac
  done
  [[ ${#SELECTED[@]} -gt 0 ]] || SELECTED=("${ALL[@]}")

  case "$MODE" in
    paths)
      printf 'KUBE_VERSION=%s\nETCD_VERSION=%s\n' "$KUBE_VERSION" "$ETCD_VERSION"
      printf 'KUBE_APISERVER=%s\nKUBECTL=%s\nETCD=%s\n' "$(path_of kube-apiserver)" "$(path_of kubectl)" "$(path_of etcd)"
      exit 0 ;;
    check)
      rc=0
      for b in "${SELECTED[@]}"; do
        if current "$b"; then log "$b: ok ($(path_of "$b"))"; else log "$b: missing or out of date ($(path_of "$b"))"; rc=1; fi
      done
      exit $rc ;;
    go)
      check_go; command -v "$GO"; exit 0 ;;
    tidy)
      check_go
      for mod in "$APISERVER_MOD" "$ETCD_MOD"; do
        log "go mod tidy in ${mod#"$REPO"/}"
        (cd "$mod" && go_env mod tidy) || die "go mod tidy failed in $mod"
      done
      exit 0 ;;
  esac

  mkdir -p "$CACHE"
  # One build at a time per cache (parallel test runs wait for the first).
  exec 9>"$CACHE/.lock"
  if command -v flock >/dev/null 2>&1; then
    flock -w 3600 9 || die "another scripts/kube-build.sh holds $CACHE/.lock for over an hour"
  fi

  todo=()
  for b in "${SELECTED[@]}"; do
    if [[ $FORCE -eq 0 ]] && current "$b"; then
      log "$b: ok ($(path_of "$b"), $(version_of "$b"), built in $(built_note "$b"))"
    else
      todo+=("$b")
    fi
  done
  [[ ${#todo[@]} -gt 0 ]] || exit 0
  check_go
  for b in "${todo[@]}"; do build_one "$b"; done
}

main "$@"; exit $?
