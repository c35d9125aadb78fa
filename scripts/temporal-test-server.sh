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

case "${1:-}" in
  install)
    if [[ -s "$DIR/classpath.txt" ]]; then log "ok ($DIR)"; exit 0; fi
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
    log "ok ($DIR)"
    ;;
  run)
    [[ -s "$DIR/classpath.txt" ]] || { log "not installed: bash scripts/temporal-test-server.sh install"; exit 1; }
    shift
    exec java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xshare:auto -cp "$(cat "$DIR/classpath.txt")" io.temporal.testserver.TestServer "$@"
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
