#!/usr/bin/env bash
# Whole-program benchmarks of ndbench itself (the bars of docs/performance.md), all on the
# in-process `memory` driver so they measure the tool, not a store.
#
#   scripts/bench.sh [path/to/ndbench]
#
# Environment:
#   BENCH_ONLY=overhead,pacer,lagbyrate,co,coratechange,workers,soak   run a subset (default: all)
#   BENCH_SOAK_SECONDS=600                      length of the flat-memory soak (default 600)
# Results: bench-results/<name>.json (reports), bench-results/soak-rss.tsv, and a summary.
set -euo pipefail
bin="${1:-bin/ndbench}"
out="bench-results"
only="${BENCH_ONLY:-overhead,pacer,lagbyrate,co,coratechange,workers,soak}"
soak="${BENCH_SOAK_SECONDS:-600}"
mkdir -p "$out"

want() { [[ ",$only," == *",$1,"* ]]; }
run() { # name, args...
  local name=$1; shift
  echo "== $name: ndbench run $*" >&2
  "$bin" run --driver memory --report "$out/$name.json" "$@" > "$out/$name.log" 2>&1 \
    || { cat "$out/$name.log" >&2; exit 1; }
}

# 1. Tool overhead: closed loop, memory store, 4 workers on 2 cores. Bar: >= 2,000,000 ops
#    per client CPU-second (<= 500 ns CPU per op: key and value generation, timing and
#    histogram recording included).
#    Measured at NDBench's default keyspace (1,000 keys) and at 100,000 keys, where the
#    memory store's own map lookups miss the CPU caches and cost more than the engine.
want overhead && run overhead --duration 20s \
  --set workload.readRate=0 --set workload.writeRate=0 \
  --set workload.readers=2 --set workload.writers=2
want overhead && run overhead-100k --duration 20s \
  --set workload.readRate=0 --set workload.writeRate=0 \
  --set workload.readers=2 --set workload.writers=2 --set workload.numKeys=100000

# 2. Pacer accuracy: 100,000 ops/s for 20 s. Bar: achieved within ±0.5%, start-lag p99
#    <= 200 µs.
want pacer && run pacer --duration 20s \
  --set workload.readRate=100000 --set workload.readers=16 --set workload.writeEnabled=false \
  --set workload.numKeys=100000

# 2b. Start lag by rate (issue 10's bar: p99 <= 50 µs and p99.9 <= 200 µs from 100 to
#    100,000 ops/s), beside the machine's floor: a goroutine spinning on the clock through
#    a 10 µs schedule, late only when its thread was not running. No pacer beats the floor
#    measured in the same minutes, so on a shared VM the bar is read against it.
lagrates="100:4 1000:4 2000:4 10000:4 50000:16 100000:16"
if want lagbyrate; then
  for rw in $lagrates; do
    run "lag-${rw%%:*}" --duration 8s --set "workload.readRate=${rw%%:*}" \
      --set "workload.readers=${rw##*:}" --set "workload.maxReaders=${rw##*:}" \
      --set workload.writeEnabled=false --set workload.numKeys=100000
  done
  if command -v go >/dev/null; then
    go test -run '^$' -bench 'StartLag/floor' -benchtime 3s ./internal/pacer/ > "$out/lag-floor.txt" 2>&1 || true
  fi
fi

# 3. Coordinated omission: a store that stalls 1 s every 10 s, offered 1,000 ops/s for
#    60 s. Bar: response p99 ~0.9 s and p95 ~0.5 s (within 10%); service time small.
want co && run co --duration 60s \
  --set drivers.memory.stallEvery=10s --set drivers.memory.stallFor=1s \
  --set workload.readRate=1000 --set workload.readers=8 --set workload.writeEnabled=false

# 3b. The same stalling store, with the read rate changed 1,000 <-> 999 ops/s every 0.7 s
#    through the API, so changes land during stalls. Bar: response p95/p99 within 10% of the
#    analytic 0.5 s / 0.9 s, and about 60,000 ops: a rate change keeps the ops already due.
if want coratechange; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  echo "== coratechange: ndbench serve, 60 s of stalls with rate changes every 0.7 s" >&2
  "$bin" serve --listen "127.0.0.1:$port" --driver memory --start --report "$out/coratechange.json" \
    --set drivers.memory.stallEvery=10s --set drivers.memory.stallFor=1s \
    --set workload.readRate=1000 --set workload.readers=8 --set workload.writeEnabled=false \
    > "$out/coratechange.log" 2>&1 &
  spid=$!
  for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/api/v1/status" >/dev/null && break; sleep 0.1; done
  end=$((SECONDS + 60)); i=0
  while [ $SECONDS -lt $end ]; do
    rate=$((1000 - i % 2)); i=$((i + 1))
    curl -sf -X PATCH "http://127.0.0.1:$port/api/v1/config" -H 'Content-Type: application/json' \
      -d "{\"values\": {\"workload.readRate\": \"$rate\"}}" >/dev/null || { kill "$spid"; cat "$out/coratechange.log" >&2; exit 1; }
    sleep 0.7
  done
  kill -TERM "$spid"; wait "$spid" || { cat "$out/coratechange.log" >&2; exit 1; }
fi

# 4. 1,000 workers: RSS under 150 MB. The keyspace stays at NDBench's default (1,000 keys)
#    so the in-process store's data does not count as the tool's memory.
want workers && run workers --duration 30s \
  --set workload.readers=500 --set workload.writers=500 \
  --set workload.readRate=25000 --set workload.writeRate=25000

# 5. Flat memory: 50,000 ops/s with 1,000,000 keys for BENCH_SOAK_SECONDS; ndbench's RSS
#    sampled every second. The store is a Redis server in its own process (started here on a
#    free loopback port, stopped by PID), so the RSS is the tool's alone: with the in-process
#    memory store, 1M values rewritten at 10,000/s make the garbage collector's heap target
#    (twice the store's live data) dominate the process's RSS.
if want soak; then
  command -v redis-server >/dev/null || { echo "soak needs redis-server: run scripts/install-test-deps.sh" >&2; exit 1; }
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  rdir=$(mktemp -d)
  redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no --dir "$rdir" > "$out/soak-redis.log" 2>&1 &
  rpid=$!
  trap 'kill "$rpid" 2>/dev/null || true; rm -rf "$rdir"' EXIT
  for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  echo "== soak: ${soak}s at 50,000 ops/s, 1,000,000 keys on redis (backfilled), RSS sampled each second" >&2
  "$bin" run --driver redis --set drivers.redis.addrs=127.0.0.1:$port --duration "${soak}s" --report "$out/soak.json" \
    --backfill --set workload.backfillWorkers=16 \
    --set workload.readRate=40000 --set workload.writeRate=10000 \
    --set workload.readers=64 --set workload.writers=16 --set workload.numKeys=1000000 --set drivers.redis.poolSize=80 \
    > "$out/soak.log" 2>&1 &
  pid=$!
  : > "$out/soak-rss.tsv"
  t=0
  while kill -0 "$pid" 2>/dev/null; do
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)
    [ -n "$rss" ] && printf '%d\t%d\n' "$t" "$rss" >> "$out/soak-rss.tsv"
    sleep 1; t=$((t + 1))
  done
  wait "$pid" || { cat "$out/soak.log" >&2; exit 1; }
  kill "$rpid" 2>/dev/null || true
fi

LAGRATES="$lagrates" python3 - "$out" "$only" <<'EOF'
import json, os, statistics, sys
out, only = sys.argv[1], sys.argv[2].split(",")
def rep(n):
    p = os.path.join(out, n + ".json")
    return json.load(open(p)) if os.path.exists(p) else None
print("\nresult".ljust(24), "figure", sep="")
for name in ("overhead", "overhead-100k"):
    if "overhead" in only and (r := rep(name)):
        c = r["client"]
        ops = r["ops"]["read"]["count"] + r["ops"]["write"]["count"]
        print(name.ljust(23), f"{c['opsPerCPUSecond']:,.0f} ops/CPU-s ({1e9/c['opsPerCPUSecond']:.0f} ns CPU/op), "
              f"{ops/r['seconds']:,.0f} ops/s on {c['cpuCores']:.2f} cores   bar >= 2,000,000")
if "pacer" in only and (r := rep("pacer")):
    s = r["ops"]["read"]
    err = 100 * (s["rate"] / s["targetRate"] - 1)
    print("pacer".ljust(23), f"achieved {s['rate']:,.0f} of {s['targetRate']:,.0f} ops/s ({err:+.2f}%), start lag "
          f"p50 {s['startLag']['p50']:.0f} µs p99 {s['startLag']['p99']:.0f} µs p99.9 {s['startLag']['p999']:.0f} µs   bar ±0.5%, p99 <= 200 µs")
if "lagbyrate" in only:
    print("start lag by rate".ljust(23), "rate     p50 µs   p99 µs  p99.9 µs  cores   bar p99 <= 50, p99.9 <= 200")
    for rw in os.environ.get("LAGRATES", "").split():
        r = rep("lag-" + rw.split(":")[0])
        if r:
            l = r["ops"]["read"]["startLag"]
            print("".ljust(23), f"{int(rw.split(':')[0]):>7,} {l['p50']:>8.0f} {l['p99']:>8.0f} {l['p999']:>9.0f}  {r['client']['cpuCores']:.2f}")
    f = os.path.join(out, "lag-floor.txt")
    if os.path.exists(f):
        for line in open(f):
            if line.startswith("BenchmarkStartLag/floor"):
                m = dict(zip(line.split()[3::2], line.split()[2::2]))
                print("".ljust(23), f"floor   {float(m['p50-lag-µs']):>8.0f} {float(m['p99-lag-µs']):>8.0f} {float(m['p99.9-lag-µs']):>9.0f}  (a spinning goroutine, same minutes)")
if "co" in only and (r := rep("co")):
    s = r["ops"]["read"]
    rt, st = s["responseTime"], s["serviceTime"]
    print("coordinated omission".ljust(23), f"response p95 {rt['p95']/1e6:.3f} s p99 {rt['p99']/1e6:.3f} s; service p95 "
          f"{st['p95']/1e3:.3f} ms p99 {st['p99']/1e3:.3f} ms   bar p95 ~0.5 s, p99 ~0.9 s (±10%)")
if "coratechange" in only and (r := rep("coratechange")):
    s = r["ops"]["read"]
    rt = s["responseTime"]
    print("CO with rate changes".ljust(23), f"response p95 {rt['p95']/1e6:.3f} s p99 {rt['p99']/1e6:.3f} s, {s['count']:,} ops in "
          f"{r['seconds']:.0f} s   bar p95 ~0.5 s, p99 ~0.9 s (±10%), ~1,000 ops/s")
if "workers" in only and (r := rep("workers")):
    print("1,000 workers".ljust(23), f"peak RSS {r['client']['maxRSSBytes']/2**20:.0f} MB   bar < 150 MB")
if "soak" in only and os.path.exists(os.path.join(out, "soak-rss.tsv")):
    rows = [tuple(map(int, l.split())) for l in open(os.path.join(out, "soak-rss.tsv")) if l.strip()]
    def med(a, b):
        v = [kb for t, kb in rows if a <= t < b]
        return statistics.median(v) / 1024 if v else float("nan")
    end = rows[-1][0] if rows else 0
    m1, mlast = med(55, 65), med(end - 10, end)
    print("soak".ljust(23), f"RSS at minute 1 {m1:.1f} MB, at the end ({end}s) {mlast:.1f} MB ({100*(mlast/m1-1):+.1f}%)   bar ±10%")
EOF
