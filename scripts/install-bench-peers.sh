#!/usr/bin/env bash
# Installs the tools ndbench is compared with in `make bench` (docs/performance.md):
#   redis-benchmark  Debian's redis-tools
#   pgbench          Debian's postgresql-client-common + postgresql (already a test dependency)
#   latte            crates.io (latte-cli), built with cargo into $NDBENCH_CACHE/peers
# The servers themselves come from scripts/install-test-deps.sh, which this runs first.
# Idempotent: a second run with everything present does nothing. Prints where latte is.
#
# Environment:
#   NDBENCH_CACHE   cache root (default $HOME/.cache/ndbench)
#   LATTE_VERSION   latte-cli version to build (default below)
set -euo pipefail

LATTE_VERSION="${LATTE_VERSION:-0.29.0}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${NDBENCH_CACHE:-$HOME/.cache/ndbench}"
peers="$cache/peers"

die() { echo "install-bench-peers: $*" >&2; exit 1; }

bash "$here/install-test-deps.sh"

command -v redis-benchmark >/dev/null 2>&1 || die "redis-benchmark not found (Debian's redis-tools)"
command -v pgbench >/dev/null 2>&1 || die "pgbench not found (Debian's postgresql-client-common)"

# latte: a Rust Cassandra benchmark on the scylla driver. cargo builds it from crates.io;
# --locked keeps the versions its authors tested. The build takes minutes, once.
latte="$peers/bin/latte"
if [ ! -x "$latte" ] || ! "$latte" --version 2>/dev/null | grep -q "$LATTE_VERSION"; then
  command -v cargo >/dev/null 2>&1 || die "cargo not found: install Rust (rustup) to build latte"
  echo "install-bench-peers: building latte-cli $LATTE_VERSION with cargo into $peers (takes minutes once)"
  cargo install --quiet --locked --root "$peers" --version "$LATTE_VERSION" latte-cli \
    || die "cargo install latte-cli $LATTE_VERSION failed"
fi
"$latte" --version >/dev/null 2>&1 || die "$latte does not run"
echo "install-bench-peers: ok (redis-benchmark, pgbench, latte $LATTE_VERSION at $latte)"
