package cli

import (
	"net"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/otlpexport/otlptest"
)

// TestRunExportsOTLP: after a short run at a known rate, the last export has the run's
// counts (as its JSON report gives them), a latency histogram whose count equals them and
// whose p99 is within one bucket of the report's, the resource, and the header, which no
// output shows; the exports reach the collector in order (a periodic export in flight at
// the end finishes before the final one).
//
// Nothing here depends on the machine's speed: how many periodic exports a 1.5 s run
// makes, and whether one outlasts its 500 ms timeout, vary with the load, so the test
// asks for the final export (which the run waits up to 5 s for) and accepts periodic
// ones that failed, whose data the cumulative final export carries anyway. The
// exporter's timing is tested on a simulated clock in internal/otlpexport.
func TestRunExportsOTLP(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(testing.TB) *otlptest.Receiver
		args  []string
		expo  bool // exponential histograms expected
	}{
		{"http, default explicit", otlptest.StartHTTP, nil, false},
		{"grpc exponential", otlptest.StartGRPC, []string{"--otlp-insecure", "--otlp-histogram", "exponential"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rcv := tc.start(t)
			rep := filepath.Join(t.TempDir(), "r.json")
			args := append([]string{"run", "--driver", "memory", "--duration", "1500ms",
				"--set", "workload.readRate=2000", "--set", "workload.writeRate=500", "--report", rep,
				"--otlp-endpoint", rcv.Endpoint, "--otlp-interval", "500ms", "--otlp-header", "x-api-key=s3cret-hdr"}, tc.args...)
			code, out, errOut := ndbench(t, nil, args...)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
			}
			if strings.Contains(out+errOut, "s3cret-hdr") {
				t.Errorf("a header value is in the output:\n%s\n%s", out, errOut)
			}
			summary := regexp.MustCompile(`OTLP export to \S+: ([1-9]\d*) exports, (\d+) failed(.*)`).FindStringSubmatch(out)
			if summary == nil || strings.Contains(summary[3], "final") {
				t.Fatalf("no OTLP summary line, or the final export failed:\n%s", out)
			}
			exports := rcv.Exports()
			if n, _ := strconv.Atoi(summary[1]); n < 1 || len(exports) < 1 || len(exports) > n {
				t.Fatalf("receiver got %d exports, the summary says %s sent", len(exports), summary[1])
			}
			for _, op := range []string{"read", "write"} {
				var prev int64
				for i, e := range exports {
					n, _ := e.SumValue("ndbench_ops_total", map[string]string{"op": op, "result": "success"})
					if n < prev {
						t.Errorf("%s: export %d of %d has %d successes, fewer than the one before (%d): an older export arrived late", op, i+1, len(exports), n, prev)
					}
					prev = n
				}
			}
			last := exports[len(exports)-1]
			if h := last.Header["x-api-key"]; len(h) != 1 || h[0] != "s3cret-hdr" {
				t.Errorf("x-api-key at the receiver = %q", h)
			}
			if res := last.Resource(); res["service.name"] != "ndbench" || !strings.Contains(res["service.instance.id"], "/run-") {
				t.Errorf("resource %v, want service.name ndbench and an instance id", res)
			}
			h := last.Metric("ndbench_response_seconds")
			if tc.expo != (h.GetExponentialHistogram() != nil) || (!tc.expo && len(h.GetHistogram().GetDataPoints()[0].GetExplicitBounds()) != 28) {
				t.Errorf("response histogram %v: want exponential %v, else the 28 classic bounds", h, tc.expo)
			}
			r := readReport(t, rep)
			for _, op := range []string{"read", "write"} {
				s := r.Ops[op]
				succ, _ := last.SumValue("ndbench_ops_total", map[string]string{"op": op, "result": "success"})
				miss, _ := last.SumValue("ndbench_ops_total", map[string]string{"op": op, "result": "miss"})
				if s.Count == 0 || succ+miss != s.Count {
					t.Errorf("%s: exported ops %d+%d, report count %d", op, succ, miss, s.Count)
				}
				count, lo, hi, ok := otlptest.Quantile(last.Metric("ndbench_response_seconds"), op, 0.99)
				if !ok || int64(count) != s.Count {
					t.Errorf("%s: exported histogram count %d (present %v), report count %d", op, count, ok, s.Count)
				}
				if want := s.ResponseTime.P99 / 1e6; !otlptest.WithinOneBucket(want, lo, hi) {
					t.Errorf("%s: p99 from the exported buckets in (%.6f, %.6f] s, report %.6f s: more than a bucket apart", op, lo, hi, want)
				}
			}
		})
	}
}

// TestRunOTLPCollectorDown: a collector that is down does not fail the run (exit 0),
// the failures are logged, and the summary says how many exports failed, the final one
// included, so that the collector lacks the end. How many periodic exports a 1 s run
// makes depends on the machine's speed, and so does how many log lines the once-a-minute
// pace allows: the test does not count on either (internal/otlpexport tests both on a
// simulated clock).
func TestRunOTLPCollectorDown(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	code, out, errOut := ndbench(t, []string{"OTEL_EXPORTER_OTLP_HEADERS=authorization=Bearer%20env-s3cret"}, "run", "--driver", "memory",
		"--duration", "1s", "--set", "workload.readRate=500", "--set", "workload.writeRate=100",
		"--otlp-endpoint", "http://"+addr, "--otlp-interval", "200ms")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	m := regexp.MustCompile(`OTLP export to http://\S+: (\d+) exports, (\d+) failed, the final one too: the collector lacks`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no OTLP summary line saying that the final export failed:\n%s", out)
	}
	n, _ := strconv.Atoi(m[1])
	failed, _ := strconv.Atoi(m[2])
	if n < 1 || failed != n {
		t.Errorf("%d of %d exports failed, want all of them", failed, n)
	}
	if !strings.Contains(errOut, "OTLP export failed") {
		t.Errorf("no log line of the failures:\n%s", errOut)
	}
	if strings.Contains(out+errOut, "env-s3cret") {
		t.Errorf("a header value from the environment is in the output:\n%s\n%s", out, errOut)
	}
}

// TestOTLPFlagErrors: bad values are refused before anything runs (even before the
// driver is looked up), naming the flag and what is allowed; ndbench config does not show
// the OTLP headers of the environment.
func TestOTLPFlagErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--otlp-endpoint", "http://127.0.0.1:1", "--otlp-temporality", "sometimes"}, "--otlp-temporality: invalid value \"sometimes\"; allowed: cumulative, delta"},
		{[]string{"--otlp-endpoint", "localhost:4318"}, "--otlp-endpoint: invalid value \"localhost:4318\"; allowed:"},
		{[]string{"--otlp-endpoint", "http://127.0.0.1:1", "--otlp-interval", "0s"}, "--otlp-interval: invalid value 0s; allowed: a positive duration"},
		{[]string{"--otlp-endpoint", "http://127.0.0.1:1", "--otlp-header", "s3cret"}, "--otlp-header: an entry is not key=value"},
	} {
		code, out, errOut := ndbench(t, nil, append([]string{"run", "--driver", "no-such-driver", "--duration", "1s"}, tc.args...)...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
		if strings.Contains(out+errOut, "s3cret") {
			t.Errorf("%v: the header is in the output: %s%s", tc.args, out, errOut)
		}
	}
	_, out, errOut := ndbench(t, []string{"OTEL_EXPORTER_OTLP_HEADERS=api-key=env-s3cret"}, "config")
	if strings.Contains(out+errOut, "env-s3cret") {
		t.Errorf("ndbench config shows the OTLP header:\n%s", out)
	}
}

// TestServeExportsOTLPFromEnv: serve takes the endpoint and headers from the standard
// variables (the endpoint as a base URL), exports while the load runs, sends the last
// interval of its final report, and shows the header value nowhere: not in its API, its
// logs or its output.
func TestServeExportsOTLPFromEnv(t *testing.T) {
	rcv := otlptest.StartHTTP(t)
	env := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + strings.TrimSuffix(rcv.Endpoint, "/v1/metrics"),
		"OTEL_EXPORTER_OTLP_HEADERS=api-key=env-s3cret"}
	rep := filepath.Join(t.TempDir(), "final.json")
	base, out, errOut, stop := startServe(t, env, "--listen", "127.0.0.1:0", "--driver", "memory", "--start",
		"--set", "workload.readRate=500", "--set", "workload.writeRate=100", "--otlp-interval", "300ms", "--node-id", "node-a",
		"--report", rep)
	deadline := time.Now().Add(10 * time.Second)
	var reads int64
	for reads == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no export with reads in 10 s (%d exports)\n%s", len(rcv.Exports()), errOut)
		}
		time.Sleep(100 * time.Millisecond)
		if ex := rcv.Exports(); len(ex) > 0 {
			reads, _ = ex[len(ex)-1].SumValue("ndbench_ops_total", map[string]string{"op": "read", "result": "success"})
		}
	}
	last := rcv.Exports()[len(rcv.Exports())-1]
	if h := last.Header["api-key"]; len(h) != 1 || h[0] != "env-s3cret" {
		t.Errorf("api-key at the receiver = %q", h)
	}
	if id := last.Resource()["service.instance.id"]; id != "node-a" {
		t.Errorf("service.instance.id = %q, want the node id", id)
	}
	var api string
	for _, path := range []string{"/api/v1/status", "/api/v1/config", "/api/v1/report", "/metrics"} {
		_, body := get(t, base+path, "")
		api += string(body)
	}
	if code := stop(); code != 0 {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	// A periodic export may outlast its 300 ms on a loaded machine and fail; the final one
	// carries its data (cumulative), and must not fail.
	if !strings.Contains(errOut.String(), "OTLP export to http://") || strings.Contains(errOut.String(), "the final one too") {
		t.Errorf("no OTLP result logged at the end, or the final export failed:\n%s", errOut)
	}
	final := rcv.Exports()[len(rcv.Exports())-1]
	for _, op := range []string{"read", "write"} {
		succ, _ := final.SumValue("ndbench_ops_total", map[string]string{"op": op, "result": "success"})
		miss, _ := final.SumValue("ndbench_ops_total", map[string]string{"op": op, "result": "miss"})
		if n := readReport(t, rep).Ops[op].Count; n == 0 || succ+miss != n {
			t.Errorf("%s: the last export has %d ops, the final report %d", op, succ+miss, n)
		}
	}
	if strings.Contains(api+out.String()+errOut.String(), "env-s3cret") {
		t.Errorf("the header value is in the API, logs or output")
	}
}
