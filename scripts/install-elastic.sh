#!/usr/bin/env bash
# Installs Elasticsearch 8 and OpenSearch 2 for the elasticsearch driver's integration tests
# (internal/testserver/elastic.go): the integ-test zips from Maven Central (core modules
# only, which is all the driver needs: index, get, bulk, search), unzipped into
#   $NDBENCH_CACHE/elasticsearch-8.19.21 and $NDBENCH_CACHE/opensearch-2.19.6.
# Each directory gets a .installed marker written last, so an interrupted download is redone
# on the next run, and a run with both present touches nothing. Exits non-zero with a
# message when a step fails. Needs mvn, unzip and java (scripts/install-test-deps.sh
# installs them and calls this script).
#
# Environment:
#   NDBENCH_CACHE   cache root (default $HOME/.cache/ndbench)
set -euo pipefail

ES_VERSION=8.19.21
OS_VERSION=2.19.6
cache="${NDBENCH_CACHE:-$HOME/.cache/ndbench}"

die() { echo "install-elastic: $*" >&2; exit 1; }

# fetch NAME VERSION GROUP: downloads GROUP:NAME:VERSION:zip and unzips it into
# $cache/NAME-VERSION (the zip holds one top-level NAME-VERSION directory).
fetch() {
  local name=$1 version=$2 group=$3
  local home="$cache/$name-$version"
  [ -f "$home/.installed" ] && return 0
  command -v mvn >/dev/null 2>&1 || die "mvn not found (run scripts/install-test-deps.sh)"
  command -v unzip >/dev/null 2>&1 || die "unzip not found (run scripts/install-test-deps.sh)"
  echo "install-elastic: fetching $name $version into $home"
  local tmp
  tmp="$(mktemp -d "$cache/.$name-XXXXXX")" || die "mktemp in $cache failed"
  # Removed on any exit of this function's caller; harmless once moved away.
  trap 'rm -rf "$tmp"' EXIT
  mvn -q -B -Dstyle.color=never dependency:copy \
    -Dartifact="$group:$name:$version:zip" -DoutputDirectory="$tmp/dl" \
    || die "mvn dependency:copy of $group:$name:$version:zip failed"
  unzip -q "$tmp/dl/$name-$version.zip" -d "$tmp/x" || die "unzip $name-$version.zip failed"
  [ -x "$tmp/x/$name-$version/bin/$name" ] || die "bin/$name missing in $name-$version.zip"
  rm -rf "$home"
  mv "$tmp/x/$name-$version" "$home" || die "move $name-$version into $cache failed"
  rm -rf "$tmp"
  trap - EXIT
  echo "$version" >"$home/.installed"
}

mkdir -p "$cache" || die "cannot create $cache"
fetch elasticsearch "$ES_VERSION" org.elasticsearch.distribution.integ-test-zip
fetch opensearch "$OS_VERSION" org.opensearch.distribution.integ-test-zip
# The servers refuse root, so the tests run them as nobody: the install must be readable
# (and its bin/ executable) by everyone; each test copies config/ into a directory of its own.
chmod -R a+rX "$cache/elasticsearch-$ES_VERSION" "$cache/opensearch-$OS_VERSION" \
  || die "chmod of the installs failed"
echo "install-elastic: ok (elasticsearch $ES_VERSION, opensearch $OS_VERSION in $cache)"
