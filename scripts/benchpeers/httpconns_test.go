package main

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/testserver"
)

// TestHTTPConnsArgs: each run's workers are its connection count, and rate × delay
// keeps all but 4% (at least 10) in flight, so the count of connections is what
// Little's law says and the pool keeps spare workers.
func TestHTTPConnsArgs(t *testing.T) {
	srv := &testserver.Server{Host: "127.0.0.1", Port: 1}
	for _, conns := range []int{httpConnsFew, httpConnsMany} {
		t.Run(strconv.Itoa(conns), func(t *testing.T) {
			sets := map[string]string{}
			args := httpConnsArgs(srv, conns, 10*time.Second)
			for i, a := range args {
				if a == "--set" && i+1 < len(args) {
					k, v, _ := strings.Cut(args[i+1], "=")
					sets[k] = v
				}
			}
			num := func(k string) int {
				n, err := strconv.Atoi(sets[k])
				if err != nil {
					t.Fatalf("--set %s=%q: %v in %q", k, sets[k], err, args)
				}
				return n
			}
			if w := num("workload.readers") + num("workload.writers"); w != conns {
				t.Errorf("%d workers, want %d", w, conns)
			}
			if num("workload.maxReaders") != num("workload.readers") || num("workload.maxWriters") != num("workload.writers") {
				t.Errorf("pools not fixed: %q", args)
			}
			rate := num("workload.readRate") + num("workload.writeRate")
			delay, err := time.ParseDuration(strings.TrimPrefix(strings.Split(sets["drivers.http.readHeaders"], "|")[0], "X-Ndbench-Delay: "))
			if err != nil {
				t.Fatalf("readHeaders %q: %v", sets["drivers.http.readHeaders"], err)
			}
			want := map[int]float64{httpConnsFew: 40, httpConnsMany: 9600}[conns]
			if inFlight := float64(rate) * delay.Seconds(); inFlight < want-0.5 || inFlight > want+0.5 {
				t.Errorf("rate %d × delay %s = %.1f in flight, want %.0f of %d workers", rate, delay, inFlight, want, conns)
			}
			if sets["drivers.http.protocol"] != "http1" {
				t.Errorf("protocol %q, want http1", sets["drivers.http.protocol"])
			}
		})
	}
}

// TestNdbenchReportRSS: the peak RSS of ndbench's report reaches the result.
func TestNdbenchReportRSS(t *testing.T) {
	r, err := parseNdbenchReport([]byte(`{"ops":{"read":{"succeeded":10}},"client":{"maxRSSBytes":12345}}`), time.Second, time.Second)
	if err != nil || r.rss != 12345 {
		t.Errorf("rss %d, %v; want 12345", r.rss, err)
	}
}

// TestHTTPConnsSaturated: the runs the 90 s rounds recorded (docs/performance.md): a
// 50-connection run at p50 1,018 ms (or 122 ms) against a 40 ms answer saturated, the one at 41.6 ms
// did not, and neither did a 10,000-connection run a few hundred ms over its 9.6 s.
func TestHTTPConnsSaturated(t *testing.T) {
	for _, c := range []struct {
		p50   time.Duration
		conns int
		want  bool
	}{
		{1018 * time.Millisecond, httpConnsFew, true},
		{122 * time.Millisecond, httpConnsFew, true}, // a 30 s round at load 10 that read 20,753 against ~15,000
		{100 * time.Millisecond, httpConnsFew, false},
		{41600 * time.Microsecond, httpConnsFew, false},
		{9609 * time.Millisecond, httpConnsMany, false},
		{10928 * time.Millisecond, httpConnsMany, false},
		{15 * time.Second, httpConnsMany, true},
	} {
		if got := httpConnsSaturated(c.p50, c.conns); got != c.want {
			t.Errorf("httpConnsSaturated(%s, %d) = %v, want %v", c.p50, c.conns, got, c.want)
		}
	}
}
