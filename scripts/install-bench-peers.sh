#!/usr/bin/env bash
# Installs the tools ndbench is compared with in `make bench` (docs/performance.md):
#   redis-benchmark  Debian's redis-tools
#   pgbench          Debian's postgresql-client-common + postgresql (already a test dependency)
#   wrk              Debian's wrk (apt-get, as root)
#   vegeta           the Go module proxy (github.com/tsenart/vegeta, pinned below), go install
#                    into $NDBENCH_CACHE/peers/bin
#   latte            crates.io (latte-cli), built with cargo into $NDBENCH_CACHE/peers
#   memtier_benchmark is not packaged for Debian 12: scripts/benchpeers uses it when MEMTIER
#                    names it, or it is on PATH or in $NDBENCH_CACHE/peers/bin, and skips its
#                    rows (redis, redis-open, memcached, memcached-open) otherwise.
# The servers themselves come from scripts/install-test-deps.sh, which this runs first.
# Idempotent: a second run with everything present does nothing. Prints where latte is.
#
# Environment:
#   NDBENCH_CACHE   cache root (default $HOME/.cache/ndbench)
#   LATTE_VERSION   latte-cli version to build (default below)
#   VEGETA_VERSION  vegeta version to install (default below)
#   NDBENCH_NO_LATTE=1  skip latte (its cargo build takes minutes; only the Cassandra
#                   comparison needs it)
set -euo pipefail

LATTE_VERSION="${LATTE_VERSION:-0.29.0}"
VEGETA_VERSION="${VEGETA_VERSION:-v12.13.0}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${NDBENCH_CACHE:-$HOME/.cache/ndbench}"
peers="$cache/peers"

die() { echo "install-bench-peers: $*" >&2; exit 1; }

bash "$here/install-test-deps.sh"

command -v redis-benchmark >/dev/null 2>&1 || die "redis-benchmark not found (Debian's redis-tools)"
command -v pgbench >/dev/null 2>&1 || die "pgbench not found (Debian's postgresql-client-common)"

# wrk: C, epoll; the efficient HTTP peer (issue 35). Debian packages it.
if ! command -v wrk >/dev/null 2>&1; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "install-bench-peers: installing Debian's wrk"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q wrk >/dev/null \
      || { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q wrk >/dev/null; } \
      || die "apt-get install wrk failed"
  else
    die "wrk not found: install Debian's wrk (apt-get install wrk, as root)"
  fi
fi

# vegeta: Go, from the module proxy at a pinned version. A go-installed vegeta prints no
# version, so each version gets a directory of its own and peers/bin links to it.
vegeta="$peers/vegeta-$VEGETA_VERSION/vegeta"
if [ ! -x "$vegeta" ]; then
  command -v go >/dev/null 2>&1 || die "go not found: needed to install vegeta"
  echo "install-bench-peers: installing vegeta $VEGETA_VERSION into $peers"
  GOBIN="$peers/vegeta-$VEGETA_VERSION" go install "github.com/tsenart/vegeta/v12@$VEGETA_VERSION" \
    || die "go install vegeta $VEGETA_VERSION failed"
fi
mkdir -p "$peers/bin"
ln -sf "$vegeta" "$peers/bin/vegeta"

# latte: a Rust Cassandra benchmark on the scylla driver. cargo builds it from crates.io;
# --locked keeps the versions its authors tested. The build takes minutes, once.
latte="$peers/bin/latte"
if [ "${NDBENCH_NO_LATTE:-}" != 1 ]; then
  if [ ! -x "$latte" ] || ! "$latte" --version 2>/dev/null | grep -q "$LATTE_VERSION"; then
    command -v cargo >/dev/null 2>&1 || die "cargo not found: install Rust (rustup) to build latte, or set NDBENCH_NO_LATTE=1"
    echo "install-bench-peers: building latte-cli $LATTE_VERSION with cargo into $peers (takes minutes once)"
    cargo install --quiet --locked --root "$peers" --version "$LATTE_VERSION" latte-cli \
      || die "cargo install latte-cli $LATTE_VERSION failed"
  fi
  "$latte" --version >/dev/null 2>&1 || die "$latte does not run"
fi
memtier="absent (not packaged for Debian 12; its rows are skipped)"
command -v memtier_benchmark >/dev/null 2>&1 && memtier="$(command -v memtier_benchmark)"
[ -x "$peers/bin/memtier_benchmark" ] && memtier="$peers/bin/memtier_benchmark"
[ -n "${MEMTIER:-}" ] && memtier="$MEMTIER (MEMTIER)"
echo "install-bench-peers: ok (redis-benchmark, pgbench, wrk, vegeta $VEGETA_VERSION, latte $LATTE_VERSION${NDBENCH_NO_LATTE:+ skipped}; memtier_benchmark $memtier)"
