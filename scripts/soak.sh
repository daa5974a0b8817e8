#!/usr/bin/env bash
# The billion-operation soak (make soak; not in CI): `ndbench serve --start` on the memory
# store at SOAK_RATE operations a second (80% reads, 20% writes) until SOAK_OPS operations
# were sent, with its HDR interval log on (serve --hdr-log). Every SOAK_EVERY seconds it
# samples the process's RSS (/proc, and process_resident_memory_bytes), its goroutines
# (go_goroutines), the operations sent (ndbench_ops_total + ndbench_errors_total), the size
# of the node's interval log (GET /api/v1/stats/intervals: the ring of 1 s intervals the
# UI, the fleet's coordinator and the reports read) and of the HDR log file. At the end it
# prints the figures docs/performance.md records (scripts/soaksummary.py): the RSS drift
# after the first minute, median against median (bar: at most 5%), the goroutines' range,
# the interval log's size, the HDR log's growth.
#
# Usage: scripts/soak.sh [BIN]   (BIN defaults to bin/ndbench; make soak builds it)
# Environment:
#   SOAK_OPS=1000000000   operations to send (10^9: 2,000 s = 33 min at the default rate)
#   SOAK_RATE=500000      operations a second (open loop)
#   SOAK_EVERY=10         seconds between samples
#   SOAK_OUT=bench-results/soak   where samples.tsv, soak.hlog, serve.log and summary.txt go
#   SOAK_FLAGS=           more serve flags, split on spaces: e.g. fixed pools, so the RSS
#                         does not follow elastic pools growing on a generator-bound machine,
#                         '--set workload.readers=8 --set workload.maxReaders=8
#                          --set workload.writers=2 --set workload.maxWriters=2'
#   SOAK_UI=0             simulated browser tabs (scripts/soakui.py): each opens the page,
#                         holds the live stream 5-60 s and polls status every 2 s, leaves and
#                         comes back; an operator tab PATCHes the read rate every 10 s. The
#                         serve-session soak: N tabs for T seconds are N*T/86,400 tab-days;
#                         the file descriptors are sampled too, and the tabs' counters go to
#                         ui.tsv (errors to ui-errors.txt).
#   SOAK_FROM=60          seconds from which the drift rule is judged (soaksummary.py): 3600
#                         for a serve session with tabs, whose series fills for an hour
# A bounded run: SOAK_OPS=100000000 (10^8, 200 s at the default rate).
set -euo pipefail

bin="${1:-bin/ndbench}"
ops="${SOAK_OPS:-1000000000}"
rate="${SOAK_RATE:-500000}"
every="${SOAK_EVERY:-10}"
out="${SOAK_OUT:-bench-results/soak}"
[ -x "$bin" ] || { echo "soak: $bin is not an executable (make build)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "soak: python3 is needed to sample and summarise" >&2; exit 2; }
mkdir -p "$out"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
reads=$((rate * 4 / 5))
writes=$((rate - reads))

# XDG_DATA_HOME: the session's record in the results history goes to a file of the soak's
# own, not the user's.
XDG_DATA_HOME="$out/data" "$bin" serve --listen "127.0.0.1:$port" --start --driver memory \
  --hdr-log "$out/soak.hlog" --log-level warn \
  --set workload.readRate="$reads" --set workload.writeRate="$writes" ${SOAK_FLAGS:-} \
  > "$out/serve.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
ui_pid=""
if [ "${SOAK_UI:-0}" -gt 0 ]; then
  python3 "$(dirname "$0")/soakui.py" "$port" "$SOAK_UI" "$reads" "$out" "$every" 2>"$out/soakui.log" &
  ui_pid=$!
  trap 'kill "$pid" $ui_pid 2>/dev/null || true' EXIT
fi
echo "soak: serve (pid $pid) on 127.0.0.1:$port, memory store at $rate ops/s until $ops operations; samples every ${every}s in $out/samples.tsv" >&2

SOAK_PID="$pid" SOAK_PORT="$port" SOAK_OPS="$ops" SOAK_RATE="$rate" SOAK_EVERY="$every" SOAK_OUT="$out" python3 - <<'EOF'
import os, re, sys, time, urllib.request

pid, port = int(os.environ["SOAK_PID"]), os.environ["SOAK_PORT"]
want, rate, every, out = int(os.environ["SOAK_OPS"]), int(os.environ["SOAK_RATE"]), float(os.environ["SOAK_EVERY"]), os.environ["SOAK_OUT"]
base = f"http://127.0.0.1:{port}"

def get(path):
    with urllib.request.urlopen(base + path, timeout=30) as r:
        return r.read()

def metric(text, name):
    total = 0.0
    for m in re.finditer(r"^" + name + r"(?:\{[^}]*\})? ([0-9.e+-]+)$", text, re.M):
        total += float(m.group(1))
    return total

def rss_kib():
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0

for _ in range(300):
    try:
        get("/health")
        break
    except Exception:
        time.sleep(0.1)
else:
    sys.exit("soak: serve did not answer /health within 30 s")

start = time.monotonic()
with open(os.path.join(out, "samples.tsv"), "w") as tsv:
    tsv.write("seconds\tops\trss_kib\tgoroutines\tinterval_log_bytes\thdr_log_bytes\theap_inuse_bytes\tfds\n")
    while True:
        time.sleep(every)
        text = get("/metrics").decode()
        sent = int(metric(text, "ndbench_ops_total") + metric(text, "ndbench_errors_total"))
        row = (round(time.monotonic() - start), sent, rss_kib(), int(metric(text, "go_goroutines")),
               len(get("/api/v1/stats/intervals")), os.path.getsize(os.path.join(out, "soak.hlog")),
               int(metric(text, "go_memstats_heap_inuse_bytes")), len(os.listdir(f"/proc/{pid}/fd")))
        tsv.write("\t".join(map(str, row)) + "\n")
        tsv.flush()
        print("soak: %5ds  %13s ops  RSS %7.1f MiB  %4d goroutines  %4d fds  interval log %6.0f KiB  HDR log %7.1f MiB"
              % (row[0], f"{row[1]:,}", row[2] / 1024, row[3], row[7], row[4] / 1024, row[5] / 2**20), file=sys.stderr)
        if sent >= want:
            break

EOF
[ -z "$ui_pid" ] || { sleep "$every"; kill "$ui_pid" 2>/dev/null || true; }
python3 "$(dirname "$0")/soaksummary.py" "$out" "$rate"
kill -TERM "$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
