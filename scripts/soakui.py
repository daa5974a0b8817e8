"""Simulated browser tabs for the serve-session soak (scripts/soak.sh with SOAK_UI=N).

Each tab does what internal/web/static/app.js does against a node, compressed in how
often it comes and goes but not in what it asks:
- opens the page: GET /api/v1/drivers, /api/v1/config, /api/v1/status and
  /api/v1/stats/series (the charts' history);
- holds the live stream (GET /api/v1/stats/stream?cumulative=1, server-sent events) for a
  random 5-60 s, then leaves and opens the page again (a tab reloaded, closed, reopened:
  the per-subscriber state a server keeps must go when the subscriber goes);
- polls /api/v1/status every 2 s while its stream is open.
One more tab is the operator: every 10 s it PATCHes workload.readRate between the soak's
rate and 90% of it (a config change a day's session makes many times).

A day of one tab open is 43,200 status polls and 86,400 stream events; N tabs for T
seconds are N*T/86,400 tab-days. Counters go to SOAK_OUT/ui.tsv every SOAK_EVERY seconds
(and at the end): requests, streams opened, events read, patches, errors.

Usage (from soak.sh): python3 soakui.py PORT TABS READ_RATE OUT EVERY
It runs until it is killed (soak.sh kills it when the soak ends).
"""
import json
import os
import random
import sys
import threading
import time
import urllib.request

port, tabs, read_rate, out, every = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], float(sys.argv[5])
base = f"http://127.0.0.1:{port}"
lock = threading.Lock()
counts = {"requests": 0, "streams": 0, "events": 0, "patches": 0, "errors": 0}
first_errors = []


def count(name, n=1):
    with lock:
        counts[name] += n


def failed(what, err):
    with lock:
        counts["errors"] += 1
        if len(first_errors) < 5:
            first_errors.append(f"{what}: {err}")


def get(path):
    with urllib.request.urlopen(base + path, timeout=30) as r:
        r.read()
    count("requests")


def tab(seed):
    rnd = random.Random(seed)
    while True:
        try:
            for path in ("/api/v1/drivers", "/api/v1/config", "/api/v1/status", "/api/v1/stats/series"):
                get(path)
            hold = rnd.uniform(5, 60)
            with urllib.request.urlopen(base + "/api/v1/stats/stream?cumulative=1", timeout=30) as stream:
                count("streams")
                until = time.monotonic() + hold
                next_poll = time.monotonic() + 2
                while time.monotonic() < until:
                    line = stream.readline()
                    if not line:
                        raise EOFError("stream ended by the server")
                    if line.startswith(b"data:"):
                        count("events")
                    if time.monotonic() >= next_poll:
                        get("/api/v1/status")
                        next_poll += 2
        except Exception as e:  # the soak records errors; a tab goes on as a user would
            failed("tab", e)
            time.sleep(1)


def operator():
    rates = [read_rate, read_rate * 9 // 10]
    i = 0
    while True:
        time.sleep(10)
        i += 1
        body = json.dumps({"values": {"workload.readRate": str(rates[i % 2])}}).encode()
        req = urllib.request.Request(base + "/api/v1/config", data=body, method="PATCH",
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                r.read()
            count("patches")
        except Exception as e:
            failed("patch", e)


def main():
    for i in range(tabs):
        threading.Thread(target=tab, args=(i,), daemon=True).start()
    threading.Thread(target=operator, daemon=True).start()
    start = time.monotonic()
    with open(os.path.join(out, "ui.tsv"), "w") as tsv:
        tsv.write("seconds\trequests\tstreams\tevents\tpatches\terrors\n")
        while True:
            time.sleep(every)
            with lock:
                row = (round(time.monotonic() - start), counts["requests"], counts["streams"], counts["events"], counts["patches"], counts["errors"])
                errs = list(first_errors)
            tsv.write("\t".join(map(str, row)) + "\n")
            tsv.flush()
            if errs:
                with open(os.path.join(out, "ui-errors.txt"), "w") as f:
                    f.write("\n".join(errs) + "\n")


if __name__ == "__main__":
    main()
