package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ndbench/ndbench/internal/testserver"
)

// The http-conns pair (issue 35): how one node holds many keep-alive HTTP/1.1 connections.
// Both runs are open loop at the same total rate against the KV service, whose answers
// take a fixed delay, so Little's law sets the connections in flight: rate × delay is
// httpConnsInFlight of the workers, httpConnsMany (then httpConnsFew), and the rest
// absorbs jitter, so the fixed pool rarely saturates (ndbench allows 10,000 workers in
// all, so the pool cannot be larger) and operations keep their intended starts: a pool
// that saturates runs as a closed loop, with no pacer waits, which would flatter that
// run's CPU per operation. The tool's figure
// is ops per CPU-second at many connections over the same at few (the goal is ≥ 0.67,
// client CPU per operation at most 1.5× its figure at 50), with peak RSS and the
// connections counted in /proc/net/tcp (Linux) in the notes.
const (
	httpConnsRate = 1000
	httpConnsMany = 10000
	httpConnsFew  = 50
)

// setUpHTTPConns starts the KV service and returns the pair: ndbench at httpConnsMany
// connections first (the table's "ndbench"), then at httpConnsFew, and with -baseline
// the baseline binary at both.
func setUpHTTPConns(ctx context.Context, o options) (*pair, error) {
	s, err := testserver.KVHTTP(ctx)
	if err != nil {
		return nil, err
	}
	run := func(label, bin string, conns int) tool {
		return tool{name: fmt.Sprintf("%s %d conns", label, conns), run: func(ctx context.Context, dir string) (result, error) {
			var peak atomic.Int64
			stop := make(chan struct{})
			done := make(chan struct{})
			go func() {
				defer close(done)
				for {
					if n := int64(establishedTo(s.Port)); n > peak.Load() {
						peak.Store(n)
					}
					select {
					case <-stop:
						return
					case <-time.After(500 * time.Millisecond):
					}
				}
			}()
			env := o.env
			if bin != o.ndbench {
				env = nil // -env is for the measured binary only, as in the other pairs
			}
			r, err := runNdbench(ctx, dir, bin, env, httpConnsArgs(s, conns, o.duration))
			close(stop)
			<-done
			if err != nil {
				return r, err
			}
			r.note = fmt.Sprintf("%d workers, open loop at %d ops/s, answers delayed %s: %d in flight on average, at most %d connections established; peak RSS %d MB",
				conns, httpConnsRate, httpConnsDelay(conns), httpConnsInFlight(conns), peak.Load(), r.rss>>20)
			if httpConnsSaturated(r.p50, conns) {
				// Said as the round runs: the table prints the first round's note only.
				fmt.Fprintf(os.Stderr, "http-conns %s %d conns: SATURATED (p50 %s against a %s answer): this round ran as a closed loop, which flatters its ops per CPU-second; compare the other rounds\n",
					label, conns, r.p50.Round(time.Millisecond), httpConnsDelay(conns))
			}
			return r, nil
		}}
	}
	tools := []tool{run("ndbench", o.ndbench, httpConnsMany), run("ndbench", o.ndbench, httpConnsFew)}
	if o.baseline != "" {
		// The earlier build's two runs in the same rounds: its own many-over-few ratio
		// is read from the rounds' lines, side by side with the measured binary's.
		tools = append(tools, run("ndbench-baseline", o.baseline, httpConnsMany), run("ndbench-baseline", o.baseline, httpConnsFew))
	}
	return &pair{name: "http-conns", srv: s, tools: tools}, nil
}

// httpConnsSaturated says whether a run's median response time shows its fixed pool
// saturated: above the answer's delay by more than half of it plus 50 ms of scheduling
// on a busy machine. Such a run waited for workers, not for its schedule, and ran as a
// closed loop without pacer waits, so its ops per CPU-second are not comparable (the
// 50-connection runs at load 18 read 22,755 saturated against 13,168 in the round after).
func httpConnsSaturated(p50 time.Duration, conns int) bool {
	d := httpConnsDelay(conns)
	return p50 > d+d/2+50*time.Millisecond
}

// httpConnsInFlight is how many of conns workers are in the store on average: all but
// 4%, and at least 10 spare (with 2 spare of 50, a 10% slower answer under load
// saturated the pool).
func httpConnsInFlight(conns int) int { return conns - max(conns/25, 10) }

// httpConnsDelay is the service's delay that keeps httpConnsInFlight requests in flight
// at the rate.
func httpConnsDelay(conns int) time.Duration {
	return time.Duration(httpConnsInFlight(conns)) * time.Second / httpConnsRate
}

// httpConnsArgs is ndbench's command line: reads and writes (both GETs of the KV
// service, answered after the delay), 9:1, paced at the total rate by fixed pools of
// conns workers in all.
func httpConnsArgs(s *testserver.Server, conns int, d time.Duration) []string {
	delay := httpConnsDelay(conns)
	readers, writers := conns*9/10, conns/10
	hdr := "X-Ndbench-Delay: " + delay.String() + "|X-Ndbench-Status: 200"
	return []string{"run", "--duration", d.String(), "--driver", "http",
		"--set", "workload.numKeys=1000",
		"--set", "workload.readers=" + strconv.Itoa(readers), "--set", "workload.maxReaders=" + strconv.Itoa(readers),
		"--set", "workload.writers=" + strconv.Itoa(writers), "--set", "workload.maxWriters=" + strconv.Itoa(writers),
		"--set", "workload.readRate=" + strconv.Itoa(httpConnsRate*9/10), "--set", "workload.writeRate=" + strconv.Itoa(httpConnsRate/10),
		"--set", "drivers.http.url=http://" + s.Addr(), "--set", "drivers.http.protocol=http1",
		"--set", "drivers.http.read=GET /kv/{key}", "--set", "drivers.http.readHeaders=" + hdr, "--set", "drivers.http.readCheck=none",
		"--set", "drivers.http.write=GET /kv/{key}", "--set", "drivers.http.writeHeaders=" + hdr, "--set", "drivers.http.writeBody=",
		"--set", "drivers.http.maxIdleConnsPerHost=" + strconv.Itoa(conns+conns/5),
		"--set", "workload.opTimeout=" + (2*delay + 5*time.Second).String(), "--set", "drivers.http.timeout=" + (2*delay + 5*time.Second).String(),
	}
}

// establishedTo counts established TCP connections to port on this machine from the
// client side (remote port = port), from /proc/net/tcp; 0 where there is none.
func establishedTo(port int) int {
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return 0
	}
	want := fmt.Sprintf(":%04X", port)
	seen := map[string]bool{} // a socket may be listed twice while the file is built
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 3 && strings.HasSuffix(f[2], want) && f[3] == "01" {
			seen[f[1]] = true
		}
	}
	return len(seen)
}
