#!/usr/bin/env bash
# Installs the data stores that the integration tests start (internal/testserver):
# Redis, Memcached, PostgreSQL, twemproxy (nutcracker) and nginx (the http driver's stock
# server: WebDAV PUT/GET with the dav module, built into Debian's nginx package) from
# Debian's packages, Cassandra 5.0.9 from Maven Central, and helm (for the Helm chart's tests
# in deploy/) built from its Go module by scripts/install-helm.sh.
# Idempotent and quick when everything is already there; exits non-zero with a message when a
# step fails, so CI fails instead of silently skipping tests.
#
# Environment:
#   NDBENCH_CACHE   cache root (default $HOME/.cache/ndbench); Cassandra lands in
#                   $NDBENCH_CACHE/cassandra-5.0.9 (lib/ and conf/), helm in
#                   $NDBENCH_CACHE/helm-<version>/bin/helm.
set -euo pipefail

CASSANDRA_VERSION=5.0.9
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${NDBENCH_CACHE:-$HOME/.cache/ndbench}"
cass_home="$cache/cassandra-$CASSANDRA_VERSION"
marker="$cass_home/.installed"

die() { echo "install-test-deps: $*" >&2; exit 1; }

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || die "not root and no sudo: cannot install Debian packages"
  sudo_cmd=(sudo)
fi

# --- Debian packages -------------------------------------------------------------------
# Checked by dpkg status so a run with everything present never touches apt.
# iproute2 (ip, tc) makes the network namespaces of the fleet's partition tests (internal/netlab).
packages=(redis-server redis-tools memcached libmemcached-tools postgresql nutcracker nginx unzip iproute2)
command -v java >/dev/null 2>&1 || packages+=(openjdk-17-jre-headless)
command -v mvn >/dev/null 2>&1 || packages+=(maven)
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-test-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -q >/dev/null || die "apt-get update failed"
  # Debian's service units do not start here (policy-rc.d); the tests run the binaries themselves.
  "${sudo_cmd[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null \
    || die "apt-get install ${missing[*]} failed"
fi
for b in redis-server redis-cli memcached nutcracker java mvn unzip; do
  command -v "$b" >/dev/null 2>&1 || die "$b not found after install"
done
{ [ -x /usr/sbin/nginx ] || command -v nginx >/dev/null 2>&1; } || die "nginx not found after install"
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || die "PostgreSQL initdb not found under /usr/lib/postgresql/*/bin"

# --- Cassandra from Maven Central ------------------------------------------------------
# The marker is written last, so an interrupted download is redone on the next run.
if [ ! -f "$marker" ]; then
  echo "install-test-deps: fetching Cassandra $CASSANDRA_VERSION jars into $cass_home"
  rm -rf "$cass_home"
  mkdir -p "$cass_home/lib" "$cass_home/conf"
  mvn -q -B -Dstyle.color=never -f "$here/cassandra/pom.xml" dependency:copy-dependencies \
    -DoutputDirectory="$cass_home/lib" -DincludeScope=runtime \
    || die "mvn dependency:copy-dependencies for cassandra-all:$CASSANDRA_VERSION failed"
  jar="$cass_home/lib/cassandra-all-$CASSANDRA_VERSION.jar"
  [ -f "$jar" ] || die "$jar missing after mvn"
  unzip -o -q -j "$jar" META-INF/hotspot_compiler -d "$cass_home/conf" \
    || die "extract hotspot_compiler from $jar failed"
  ls "$cass_home"/lib/jamm-*.jar >/dev/null 2>&1 || die "jamm agent jar missing in $cass_home/lib"
  echo "$CASSANDRA_VERSION" >"$marker"
fi
bash "$here/install-dynamodb-local.sh" || die "installing DynamoDB Local failed (scripts/install-dynamodb-local.sh)"

bash "$here/install-gremlin-server.sh" || die "installing Gremlin Server failed (scripts/install-gremlin-server.sh)"
bash "$here/install-geode.sh" || die "installing Geode failed (scripts/install-geode.sh)"

bash "$here/install-elastic.sh" || die "installing Elasticsearch and OpenSearch failed (scripts/install-elastic.sh)"

# --- helm from the Go module proxy ---------------------------------------------------------
helm="$(bash "$here/install-helm.sh")" || die "installing helm failed (scripts/install-helm.sh)"

echo "install-test-deps: ok (redis, memcached, postgresql, nutcracker, nginx, cassandra $CASSANDRA_VERSION in $cass_home, $helm)"
