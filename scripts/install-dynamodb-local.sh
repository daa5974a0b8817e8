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

if [ -f "$marker" ]; then
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
echo "install-dynamodb-local: ok (DynamoDB Local $DYNAMODB_LOCAL_VERSION in $home)"
