# Building scripts/temporal-pg.sh's Temporal server: temporal-server,
# temporal-sql-tool and tdbg (the server's admin CLI: `members` reads the
# cluster's rings with it) from the pinned go.temporal.io/server module, with the
# module's schema/postgresql/v12 files, under $BIN_DIR (built once, under a
# lock, so concurrent starts do not build twice). Sourced by
# scripts/temporal-pg.sh, not run: it uses the script's settings (REPO,
# TEMPORAL_SERVER_VERSION, CACHE, BIN_DIR) and log/die.

go_bin() {
  if [[ -n "${GO:-}" ]]; then echo "$GO"; else bash "$REPO/scripts/kube-build.sh" --go | tail -1; fi
}

installed() { [[ -x "$BIN_DIR/temporal-server" && -x "$BIN_DIR/temporal-sql-tool" && -x "$BIN_DIR/tdbg" && -d "$BIN_DIR/schema/postgresql/v12" ]]; }

install() {
  # Checked before the lock: PostgreSQL and Temporal started later must not
  # inherit the lock's descriptor (they would hold it for their lifetime).
  if installed; then log "Temporal server $TEMPORAL_SERVER_VERSION: ok ($BIN_DIR)"; return 0; fi
  mkdir -p "$CACHE"
  exec 9>"$CACHE/.lock"
  if command -v flock >/dev/null 2>&1; then flock -w 3600 9 || die "another install holds $CACHE/.lock"; fi
  if installed; then exec 9>&-; log "Temporal server $TEMPORAL_SERVER_VERSION: ok ($BIN_DIR)"; return 0; fi
  build
  exec 9>&-
}

build() {
  local go start secs tmp moddir
  go="$(go_bin)"
  log "building Temporal server $TEMPORAL_SERVER_VERSION (cmd/server, cmd/tools/sql, cmd/tools/tdbg) with $("$go" env GOVERSION); the first build downloads modules and takes minutes"
  start=$SECONDS
  tmp="$(mktemp -d "$CACHE/build.XXXXXX")"
  # go install MODULE@VERSION builds with the module's own go.mod and go.sum.
  if ! env GOTOOLCHAIN=local CGO_ENABLED=0 GOBIN="$tmp" GOFLAGS="-buildvcs=false${GOFLAGS:+ $GOFLAGS}" \
      "$go" install -trimpath -ldflags "-s -w" \
      "go.temporal.io/server/cmd/server@$TEMPORAL_SERVER_VERSION" \
      "go.temporal.io/server/cmd/tools/sql@$TEMPORAL_SERVER_VERSION" \
      "go.temporal.io/server/cmd/tools/tdbg@$TEMPORAL_SERVER_VERSION"; then
    rm -rf "$tmp"
    die "go install failed (see above); module download errors mean the Go module proxy ($("$go" env GOPROXY)) is unreachable"
  fi
  moddir="$(env GOTOOLCHAIN=local "$go" mod download -json "go.temporal.io/server@$TEMPORAL_SERVER_VERSION" \
    | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  [[ -d "$moddir/schema/postgresql/v12" ]] || { rm -rf "$tmp"; die "no schema/postgresql/v12 in the module ($moddir)"; }
  mkdir -p "$tmp/schema/postgresql"
  cp -R "$moddir/schema/postgresql/v12" "$tmp/schema/postgresql/"
  chmod -R u+w "$tmp/schema"
  mv "$tmp/server" "$tmp/temporal-server"
  mv "$tmp/sql" "$tmp/temporal-sql-tool"
  chmod 755 "$tmp"
  secs=$((SECONDS - start))
  printf 'version=%s\ngo=%s\nbuilt_at=%s\nbuild_seconds=%s\nhost_cpus=%s\n' "$TEMPORAL_SERVER_VERSION" \
    "$("$go" env GOVERSION)" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$secs" "$(nproc 2>/dev/null || echo '?')" >"$tmp/build-info"
  rm -rf "$BIN_DIR"
  mv "$tmp" "$BIN_DIR"
  log "built $BIN_DIR in ${secs}s"
}
