package api

import (
	"net/http"
	rtmetrics "runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/stats"
)

// TestRunawayScriptsKeepTheNodeUp runs scripts whose operations never return, or
// allocate in a loop, under load in a served node: the node keeps answering (status,
// stop and shutdown, each within a request's patience of 10 s), and the operations are
// counted as failed with a reason that names what stopped them. An allocating script
// once killed ndbench serve with "fatal error: out of memory", and one that never
// returned was never stopped.
func TestRunawayScriptsKeepTheNodeUp(t *testing.T) {
	for _, tc := range []struct {
		name, read, timeout string
		class, says         string
	}{
		{"never returns", `for (;;) {}`, "300ms", "timeout", "deadline"},
		{"never returns, catching", `for (;;) { try { for (;;) {} } catch (e) {} }`, "300ms", "timeout", "deadline"},
		{"allocates in a loop", `let a = []; for (;;) { a.push(new Float64Array(1e5)); }`, "10s", "rejected", "memoryLimit 64MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "drivers.script.source=function read(key) { "+tc.read+" }\nfunction write(key, value) {}",
				"drivers.script.memoryLimit=64MiB", "drivers.script.callTimeout=1m",
				"workload.readRate=20", "workload.writeEnabled=false", "workload.maxReaders=4", "workload.opTimeout="+tc.timeout)
			e.must(http.StatusOK, http.MethodPost, "/api/v1/driver/init", map[string]any{"driver": "script"}, nil)
			since := time.Now()
			e.must(http.StatusOK, http.MethodPost, "/api/v1/load/start", nil, nil)
			e.waitInterval("failed reads", since, func(s stats.Summary) bool { return s.Ops["read"].Errors > 0 })
			if tc.class == "rejected" {
				// Stops for memory repeat while the load runs: each must hold, so the heap
				// stays within a few doublings of the limit (a typed-array loop outruns
				// the collector that far) instead of ratcheting up with every stop.
				sample := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
				var worst uint64
				for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(2 * time.Millisecond) {
					rtmetrics.Read(sample)
					worst = max(worst, sample[0].Value.Uint64())
				}
				if worst > 16*64<<20 {
					t.Errorf("the live heap reached %d MiB with memoryLimit 64MiB", worst>>20)
				}
			}
			got := e.stats().Errors["read"]
			found := false
			for _, m := range got {
				found = found || (m.Class == tc.class && strings.Contains(m.Message, tc.says))
			}
			if !found {
				t.Errorf("errors[read] = %+v, want a %s failure saying %q", got, tc.class, tc.says)
			}
			// The node answers each, within the request's 10 s (callAs): a node held by
			// a script that never returns would wait for its call timeout, a minute. How
			// soon it answers is the machine's; it is logged, not asserted.
			for _, step := range []struct{ method, path string }{
				{http.MethodGet, "/api/v1/status"},
				{http.MethodPost, "/api/v1/load/stop"},
				{http.MethodPost, "/api/v1/driver/shutdown"},
			} {
				began := time.Now()
				e.must(http.StatusOK, step.method, step.path, nil, nil)
				t.Logf("%s %s took %v", step.method, step.path, time.Since(began).Round(time.Millisecond))
			}
		})
	}
}
