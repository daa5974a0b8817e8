#!/usr/bin/env bash
# Installs Apache TinkerPop's Gremlin Server (with the in-memory TinkerGraph) from Maven
# Central for the gremlin driver's integration tests (internal/testserver/gremlin.go): the
# jars of scripts/gremlin/pom.xml and their runtime dependencies are copied into
# $NDBENCH_CACHE/gremlin-server-<version>/lib. Called by scripts/install-test-deps.sh.
# Idempotent and instant when cached (a marker written last records a complete copy); exits
# non-zero with a message when a step fails. Needs java and mvn (install-test-deps.sh
# installs them first).
#
# Environment:
#   NDBENCH_CACHE   cache root (default $HOME/.cache/ndbench)
set -euo pipefail

GREMLIN_VERSION=3.7.3
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${NDBENCH_CACHE:-$HOME/.cache/ndbench}"
home="$cache/gremlin-server-$GREMLIN_VERSION"
marker="$home/.installed"

die() { echo "install-gremlin-server: $*" >&2; exit 1; }

if [ -f "$marker" ]; then
  exit 0
fi
command -v mvn >/dev/null 2>&1 || die "mvn not found (scripts/install-test-deps.sh installs it)"
command -v java >/dev/null 2>&1 || die "java not found (scripts/install-test-deps.sh installs it)"
echo "install-gremlin-server: fetching Gremlin Server $GREMLIN_VERSION jars into $home"
rm -rf "$home"
mkdir -p "$home/lib"
mvn -q -B -Dstyle.color=never -f "$here/gremlin/pom.xml" dependency:copy-dependencies \
  -DoutputDirectory="$home/lib" -DincludeScope=runtime \
  || die "mvn dependency:copy-dependencies for gremlin-server:$GREMLIN_VERSION failed"
for j in gremlin-server tinkergraph-gremlin gremlin-core; do
  [ -f "$home/lib/$j-$GREMLIN_VERSION.jar" ] || die "$home/lib/$j-$GREMLIN_VERSION.jar missing after mvn"
done
# The marker is written last, so an interrupted download is redone on the next run.
echo "$GREMLIN_VERSION" >"$marker"
