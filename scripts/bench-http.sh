#!/usr/bin/env bash
# Benchmarks the http driver beside vegeta (github.com/tsenart/vegeta, pinned below): GETs
# of a 100-byte value from the KV test service and from nginx, HTTP/1.1 and h2c, 32
# concurrent requests, in ops per client CPU-second (docs/performance.md). The servers are
# started by the Go test harness (internal/testserver); nginx comes from
# scripts/install-test-deps.sh.
#
#   bash scripts/bench-http.sh [count]     # count: runs of each benchmark (default 3)
set -euo pipefail

VEGETA_VERSION=v12.13.0
cd "$(dirname "${BASH_SOURCE[0]}")/.."
cache="${NDBENCH_CACHE:-$HOME/.cache/ndbench}/vegeta-$VEGETA_VERSION"
if [ ! -x "$cache/vegeta" ]; then
  echo "bench-http: installing vegeta $VEGETA_VERSION into $cache"
  GOBIN="$cache" go install "github.com/tsenart/vegeta/v12@$VEGETA_VERSION"
fi
count="${1:-3}"
# Interleaved runs (-count repeats each benchmark in turn), so a busy spell on the shared
# machine hits both tools rather than one.
for i in $(seq "$count"); do
  VEGETA="$cache/vegeta" VEGETA_DURATION=5s go test -tags integration -count=1 -run '^$' \
    -bench '^Benchmark(Vegeta)?Get$' -benchtime 5s ./drivers/http/
done
