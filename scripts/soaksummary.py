"""The soak's figures from its samples (scripts/soak.sh writes SOAK_OUT/samples.tsv).

Usage: python3 scripts/soaksummary.py SOAK_OUT RATE

RSS drift is the change of the median RSS from the first tenth of the samples after the
first minute to the last tenth (at least three samples each), and the least-squares slope
over all of them: the RSS of a Go process saws up and down with each garbage collection
cycle (±5-8% between 15 s samples of the soak at 300,000 ops/s), so one sample against
another (the peak against the first) measures where two cycles were caught, not growth.
The peak is printed beside them.

SOAK_FROM (seconds, default 60) is where the rule starts: a serve session with browser tabs
fills the series ring and its encoded points for an hour (3,600 one-second points), so its
drift is judged from 3,600 s on (SOAK_FROM=3600), past the fill, not across it.
"""
import os
import statistics
import sys


def main(out, rate):
    rows = []
    with open(os.path.join(out, "samples.tsv")) as f:
        next(f)
        for line in f:
            rows.append(tuple(int(x) for x in line.split("\t")))
    if not rows:
        sys.exit("soak: no samples")
    start = int(os.environ.get("SOAK_FROM", "60"))
    after = [r for r in rows if r[0] >= start] or rows
    since = "the first minute" if start == 60 else f"{start} s"
    k = max(3, len(after) // 10)
    early, late = after[:k], after[-k:]
    e, l = statistics.median(r[2] for r in early), statistics.median(r[2] for r in late)
    ts = [r[0] for r in after]
    ys = [r[2] for r in after]
    mt, my = statistics.fmean(ts), statistics.fmean(ys)
    var = sum((t - mt) ** 2 for t in ts)
    slope = sum((t - mt) * (y - my) for t, y in zip(ts, ys)) / var if var else 0.0
    peak = max(ys)
    last = rows[-1]
    secs = last[0]
    lines = [
        f"operations sent      {last[1]:,} in {secs} s ({last[1] / secs:,.0f}/s of {rate:,}/s asked)",
        f"RSS                  median {e / 1024:.1f} MiB over {early[0][0]}-{early[-1][0]} s, {l / 1024:.1f} MiB over {late[0][0]}-{late[-1][0]} s; "
        f"range {min(ys) / 1024:.1f}-{peak / 1024:.1f} MiB after {since}",
        f"RSS drift            {100 * (l - e) / e:+.1f}% (median of the last tenth against the first tenth after {since}; bar: at most 5%); "
        f"slope {100 * slope * 3600 / my:+.2f}% an hour; peak {100 * (peak - e) / e:+.1f}% over the first tenth's median",
        f"goroutines           {min(r[3] for r in after)}..{max(r[3] for r in after)} after {since}",
    ]
    if all(len(r) > 6 for r in after):
        # The Go heap in use, beside the RSS: growth of live objects shows here, while the
        # RSS also moves with what the runtime's scavenger has returned to the system.
        he, hl = statistics.median(r[6] for r in early), statistics.median(r[6] for r in late)
        lines.append(f"heap in use          median {he / 2**20:.1f} MiB first tenth, {hl / 2**20:.1f} MiB last tenth ({100 * (hl - he) / he:+.1f}%)")
    if all(len(r) > 7 for r in after):
        lines.append(f"file descriptors     {min(r[7] for r in after)}..{max(r[7] for r in after)} after {since} (first tenth median {statistics.median(r[7] for r in early):.0f}, last tenth {statistics.median(r[7] for r in late):.0f})")
    lines += [
        f"interval log         {min(r[4] for r in after) / 1024:.0f}..{max(r[4] for r in after) / 1024:.0f} KiB (GET /api/v1/stats/intervals)",
        f"HDR log              {last[5] / 2**20:.1f} MiB, {last[5] / secs * 3600 / 2**20:.1f} MiB per hour",
    ]
    ui = os.path.join(out, "ui.tsv")
    if os.path.exists(ui):
        with open(ui) as f:
            urows = [line.split("\t") for line in f.read().splitlines()[1:]]
        if urows:
            s, req, streams, events, patches, errors = (int(x) for x in urows[-1])
            tabs = int(os.environ.get("SOAK_UI", "0"))
            lines.append(f"browser tabs         {tabs} for {s} s ({tabs * s / 86400:.2f} tab-days): {req:,} requests, "
                         f"{streams:,} live streams opened and left, {events:,} stream events, {patches:,} config PATCHes, {errors:,} errors")
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: soaksummary.py SOAK_OUT RATE")
    main(sys.argv[1], int(sys.argv[2]))
