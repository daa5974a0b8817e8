#!/usr/bin/env bash
# Installs Apache Geode 1.14.4 with its developer REST API from Maven Central for the geode
# driver's integration tests (internal/testserver/geode.go): the jars of scripts/geode/pom.xml
# and their runtime dependencies go to $NDBENCH_CACHE/geode-1.14.4/lib, the REST API's war to
# tools/Extensions (where Geode looks for it under GEODE_HOME), and the small server launcher
# scripts/geode/GeodeServer.java beside them. See scripts/geode/pom.xml for why 1.14.4.
# Idempotent and instant when cached (a marker written last records a complete copy); exits
# non-zero with a message when a step fails. Needs java and mvn (install-test-deps.sh installs
# them first). Called by scripts/install-test-deps.sh.
#
# Environment:
#   NDBENCH_CACHE   cache root (default $HOME/.cache/ndbench)
set -euo pipefail

GEODE_VERSION=1.14.4
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${NDBENCH_CACHE:-$HOME/.cache/ndbench}"
home="$cache/geode-$GEODE_VERSION"
marker="$home/.installed"

die() { echo "install-geode: $*" >&2; exit 1; }

# The launcher is copied on every run, so a change to it reaches the cache.
if [ -f "$marker" ]; then
  cp "$here/geode/GeodeServer.java" "$home/GeodeServer.java" || die "copy GeodeServer.java failed"
  exit 0
fi
command -v mvn >/dev/null 2>&1 || die "mvn not found (scripts/install-test-deps.sh installs it)"
command -v java >/dev/null 2>&1 || die "java not found (scripts/install-test-deps.sh installs it)"
echo "install-geode: fetching Geode $GEODE_VERSION jars into $home"
rm -rf "$home"
mkdir -p "$home/lib" "$home/tools/Extensions"
mvn -q -B -Dstyle.color=never -f "$here/geode/pom.xml" dependency:copy-dependencies \
  -DoutputDirectory="$home/lib" -DincludeScope=runtime \
  || die "mvn dependency:copy-dependencies for geode $GEODE_VERSION failed"
war="$home/lib/geode-web-api-$GEODE_VERSION.war"
[ -f "$war" ] || die "$war missing after mvn"
mv "$war" "$home/tools/Extensions/" || die "move $war to tools/Extensions failed"
for j in geode-core geode-http-service; do
  [ -f "$home/lib/$j-$GEODE_VERSION.jar" ] || die "$home/lib/$j-$GEODE_VERSION.jar missing after mvn"
done
cp "$here/geode/GeodeServer.java" "$home/GeodeServer.java" || die "copy GeodeServer.java failed"
# The marker is written last, so an interrupted download is redone on the next run.
echo "$GEODE_VERSION" >"$marker"
