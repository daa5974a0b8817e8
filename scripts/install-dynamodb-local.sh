#!/usr/bin/env bash
# Installs DynamoDB Local 2.6.1 for the dynamodb driver's integration tests
# (internal/testserver.DynamoDBLocal): its jars and sqlite4java's native libraries from Maven
# Central, through scripts/dynamodb/pom.xml. Needs java (17+) and mvn, which
# scripts/install-test-deps.sh installs before calling this script.
# Idempotent and quick when already installed (a marker file, written last, says the
# download completed); exits non-zero with a message when a step fails.
#
# Environment:
#   NDBENCH_CACHE   cache root (default $HOME/.cache/ndbench); DynamoDB Local lands in
#                   $NDBENCH_CACHE/dynamodb-local-2.6.1/lib.
set -euo pipefail

DYNAMODB_LOCAL_VERSION=2.6.1
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${NDBENCH_CACHE:-$HOME/.cache/ndbench}"
home="$cache/dynamodb-local-$DYNAMODB_LOCAL_VERSION"
marker="$home/.installed"

die() { echo "install-dynamodb-local: $*" >&2; exit 1; }

# compile_launcher compiles the loopback launcher of internal/testserver once, with its
# source beside the class so the harness can tell a stale build from a current one (it
# compiles per server when they differ, or without javac). Optional: a JRE has no javac.
compile_launcher() {
  local src="$here/../internal/testserver/dynamodblocal/Launcher.java" out="$home/launcher"
  [ -f "$src" ] || return 0
  command -v javac >/dev/null 2>&1 || return 0
  if [ -f "$out/Launcher.class" ] && cmp -s "$src" "$out/Launcher.java"; then
    return 0
  fi
  rm -rf "$out"
  javac -nowarn -cp "$home/lib/*" -d "$out" "$src" || die "javac $src failed"
  cp "$src" "$out/Launcher.java"
}

if [ -f "$marker" ]; then
  compile_launcher
  echo "install-dynamodb-local: ok (DynamoDB Local $DYNAMODB_LOCAL_VERSION in $home)"
  exit 0
fi
for b in java mvn; do
  command -v "$b" >/dev/null 2>&1 || die "$b not found (run scripts/install-test-deps.sh, which installs it)"
done
echo "install-dynamodb-local: fetching DynamoDB Local $DYNAMODB_LOCAL_VERSION jars into $home"
rm -rf "$home"
mkdir -p "$home/lib"
mvn -q -B -Dstyle.color=never -f "$here/dynamodb/pom.xml" dependency:copy-dependencies \
  -DoutputDirectory="$home/lib" -DincludeScope=runtime \
  || die "mvn dependency:copy-dependencies for DynamoDBLocal:$DYNAMODB_LOCAL_VERSION failed"
ls "$home"/lib/DynamoDBLocal-*.jar >/dev/null 2>&1 || die "DynamoDBLocal jar missing in $home/lib after mvn"
ls "$home"/lib/libsqlite4java-linux-amd64*.so >/dev/null 2>&1 \
  || die "sqlite4java native library (libsqlite4java-linux-amd64*.so) missing in $home/lib after mvn"
echo "$DYNAMODB_LOCAL_VERSION" >"$marker"
compile_launcher
echo "install-dynamodb-local: ok (DynamoDB Local $DYNAMODB_LOCAL_VERSION in $home)"
