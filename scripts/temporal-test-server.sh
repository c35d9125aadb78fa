#!/usr/bin/env bash
# Temporal's time-skipping test server (the Java SDK's io.temporal:temporal-test-server
# from Maven Central), for the workflow tests of tier 0 (docs/testing.md).
#
#   scripts/temporal-test-server.sh install   resolve it and its dependencies with Maven (once, cached)
#   scripts/temporal-test-server.sh run PORT  run it (what the launcher does)
#
# @temporalio/testing would download a native build from GitHub on first use; this
# is the same server from a registry the machine reaches, started with the JDK.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VERSION="${TEMPORAL_TEST_SERVER_VERSION:-1.31.0}"
DIR="$REPO/.cache/temporal-test-server/$VERSION"
log() { printf '[temporal-test-server] %s\n' "$*"; }
JAVA_OPTS=(-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xshare:auto)
# The classes the server loads until it listens, archived for this JDK (AppCDS): the SDK gives the server 5 s to
# listen, and a JVM loading them from the jars took 2-3 s on two busy cores (and over 5 s under a heavy round), with
# the archive 0.6-1.1 s.
ARCHIVE="app-$( (java -version 2>&1 || true) | head -1 | tr -dc 'A-Za-z0-9._-').jsa"

# Runs the server once until it listens and stops it: the JVM writes the archive of what it loaded as it exits.
class_archive() {
  [[ -s "$DIR/$ARCHIVE" ]] && return 0
  local port pid i
  port=$(node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); })')
  java "${JAVA_OPTS[@]}" -XX:ArchiveClassesAtExit="$DIR/$ARCHIVE.part" -cp "$(cat "$DIR/classpath.txt")" \
    io.temporal.testserver.TestServer "$port" >"$DIR/archive.log" 2>&1 &
  pid=$!
  for ((i = 0; i < 600; i++)); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then break; fi
    sleep 0.1
  done
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  if [[ -s "$DIR/$ARCHIVE.part" ]]; then
    mv -f "$DIR/$ARCHIVE.part" "$DIR/$ARCHIVE"
    log "class archive written ($ARCHIVE)"
  else
    log "no class archive written (the server starts without it; $DIR/archive.log)"
  fi
}

case "${1:-}" in
  install)
    if [[ -s "$DIR/classpath.txt" ]]; then class_archive; log "ok ($DIR)"; exit 0; fi
    command -v java >/dev/null || { log "java not found: install a JDK (17 or newer)"; exit 1; }
    command -v mvn >/dev/null || { log "mvn not found: install Maven"; exit 1; }
    mkdir -p "$DIR"
    cat >"$DIR/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.metalflow</groupId><artifactId>temporal-test-server-launcher</artifactId><version>1</version>
  <dependencies>
    <dependency><groupId>io.temporal</groupId><artifactId>temporal-test-server</artifactId><version>$VERSION</version></dependency>
  </dependencies>
</project>
POM
    log "resolving io.temporal:temporal-test-server:$VERSION with Maven"
    (cd "$DIR" && mvn -q -B -Dstyle.color=never dependency:build-classpath -Dmdep.outputFile=classpath.txt.part) \
      || { log "Maven could not resolve it (Maven Central reachable?)"; exit 1; }
    mv "$DIR/classpath.txt.part" "$DIR/classpath.txt"
    class_archive
    log "ok ($DIR)"
    ;;
  run)
    [[ -s "$DIR/classpath.txt" ]] || { log "not installed: bash scripts/temporal-test-server.sh install"; exit 1; }
    shift
    # With the class archive of this JDK (install makes it), without it if it is missing or of another JDK.
    archive=()
    if [[ -s "$DIR/$ARCHIVE" ]]; then archive=(-XX:SharedArchiveFile="$DIR/$ARCHIVE"); fi
    exec java "${JAVA_OPTS[@]}" "${archive[@]}" -cp "$(cat "$DIR/classpath.txt")" io.temporal.testserver.TestServer "$@"
    ;;
  [0-9]*)
    # @temporalio/testing runs the executable with the port as its first argument.
    exec "$0" run "$@"
    ;;
  *)
    sed -n '2,8p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
esac
