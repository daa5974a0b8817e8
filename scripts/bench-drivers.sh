#!/usr/bin/env bash
# ndbench against the C and Rust tools on real servers (issue 10's bars, docs/performance.md):
# installs the peers (scripts/install-bench-peers.sh), runs BenchmarkDriverEfficiency and
# BenchmarkClientAddedLatency BENCH_COUNT times (default 3; go test interleaves the
# sub-benchmarks across counts), then BenchmarkCassandraVsLatte once with BENCH_COUNT
# interleaved rounds of its own (it takes the medians itself), and prints the median of
# every figure.
#
#   scripts/bench-drivers.sh                 all drivers
#   BENCH_DRIVERS='redis' scripts/bench-drivers.sh   sub-benchmarks matching a regexp
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here/.."
count="${BENCH_COUNT:-3}"
filter="${BENCH_DRIVERS:-.}"
mkdir -p bench-results
bash scripts/install-bench-peers.sh
PATH="${NDBENCH_CACHE:-$HOME/.cache/ndbench}/peers/bin:$PATH" \
  go test -tags integration -run '^$' -bench "DriverEfficiency/$filter|ClientAddedLatency" \
    -benchtime 1x -count "$count" -timeout 90m ./internal/engine/ | tee bench-results/drivers.txt
# latte against the cassandra driver, when the filter selects cassandra.
if echo cassandra | grep -Eq -- "$filter"; then
  NDBENCH_LATTE_ROUNDS="$count" go test -tags integration -run '^$' -bench 'CassandraVsLatte' \
    -benchtime 1x -count 1 -timeout 90m ./internal/engine/ | tee -a bench-results/drivers.txt
fi
python3 - bench-results/drivers.txt <<'PY'
import collections, re, statistics, sys
runs = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    if not line.startswith("Benchmark"):
        continue
    f = line.split()
    name = re.sub(r"-\d+$", "", f[0])
    for v, unit in zip(f[2::2], f[3::2]):
        runs[name][unit].append(float(v))
print("\nmedians over", sys.argv[1])
for name, units in runs.items():
    print(name)
    for unit, vs in sorted(units.items()):
        print(f"  {unit:40s} {statistics.median(vs):14,.3f}   (n={len(vs)}: {', '.join(f'{v:,.4g}' for v in vs)})")
PY
