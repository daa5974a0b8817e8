package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/stats"
	"github.com/ndbench/ndbench/internal/web"
)

// TestTimelineInTheHTML: a scenario's phases and hooks are in the JSON and in a table of
// the HTML report.
func TestTimelineInTheHTML(t *testing.T) {
	r := htmlReport(t)
	r.Timeline = []Mark{{Kind: "phase", Name: "steady", Start: "2026-01-02T15:04:05.000Z"},
		{Kind: "hook", Name: "pause-node", Start: "2026-01-02T15:04:07.000Z", Error: "exit 1"}}
	var b bytes.Buffer
	if err := WriteHTML(&b, r, Charts(web.Charts())); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<h2>Timeline</h2>", "<td>pause-node</td>", "failed: exit 1", `"timeline":[{"kind":"phase"`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
}

// TestGeneratorBound: a saturated client, and an open-loop class far short of its target
// with its lag its own and its workers out of the store, make a run invalid; a store that
// held the workers, a lag without the shortfall (the generator caught up), and a
// shortfall of a few percent do not.
func TestGeneratorBound(t *testing.T) {
	series := func(workers int) []stats.Point {
		return []stats.Point{{Ops: map[string]stats.OpSummary{"read": {TargetRate: 1000, Workers: workers}}},
			{Ops: map[string]stats.OpSummary{"read": {TargetRate: 1000, Workers: workers}}}}
	}
	short := stats.OpSummary{Count: 200, Attempted: 200, Succeeded: 200, Rate: 100, Workers: 8,
		ResponseTime: stats.Latency{P50: 20000, P99: 50000}, ServiceTime: stats.Latency{P50: 1000, Mean: 1000},
		StartLag: stats.Latency{P50: 15000, P99: 40000}, StartLagOwn: 8000, StartLagWait: 2000}
	tests := []struct {
		name    string
		op      func(stats.OpSummary) stats.OpSummary
		workers int
		cores   float64
		want    string // in the one reason; "" for none
	}{
		{"far short, lag its own, workers free", func(s stats.OpSummary) stats.OpSummary { return s }, 8, 0.2, "read: sent 100 of the 1000 ops/s target"},
		{"saturated client", func(s stats.OpSummary) stats.OpSummary { return s }, 8, 3.8, "cores busy"},
		{"workers held in the store", func(s stats.OpSummary) stats.OpSummary { s.ServiceTime.P50 = 70000; return s }, 8, 0.2, ""},
		{"the lag was waiting for workers in the store", func(s stats.OpSummary) stats.OpSummary { s.StartLagOwn, s.StartLagWait = 100, 9900; return s }, 8, 0.2, ""},
		{"a few percent short", func(s stats.OpSummary) stats.OpSummary {
			s.Attempted, s.Succeeded, s.Count = 1900, 1900, 1900
			return s
		}, 8, 0.2, ""},
		{"only the tail late", func(s stats.OpSummary) stats.OpSummary { s.StartLag.P50 = 10; return s }, 8, 0.2, ""},
		{"most operations failed", func(s stats.OpSummary) stats.OpSummary { s.Errors = 100; s.Attempted = 300; return s }, 8, 0.2, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Report{Seconds: 2, Ops: map[string]stats.OpSummary{"read": tt.op(short)},
				Client: Client{CPUCores: tt.cores, GOMAXPROCS: 4, NumCPU: 4}, Series: series(tt.workers)}
			got := GeneratorBound(r)
			if tt.want == "" && len(got) > 0 || tt.want != "" && (len(got) != 1 || !strings.Contains(got[0], tt.want)) {
				t.Errorf("GeneratorBound = %q, want one reason with %q (none for \"\")", got, tt.want)
			}
		})
	}
}

// TestTimeoutsHoldWorkers: operations that timed out held their workers for the op
// timeout though they have no service time: a store that stalled into timeouts is the
// store's result, not the generator's (it was judged the generator's before).
func TestTimeoutsHoldWorkers(t *testing.T) {
	lagging := stats.OpSummary{Count: 100, Rate: 50, Workers: 4, Errors: 24, Failures: map[string]int64{"timeout": 24},
		ResponseTime: stats.Latency{P99: 50000}, ServiceTime: stats.Latency{Mean: 500}, StartLag: stats.Latency{P99: 40000}}
	calm := stats.OpSummary{Rate: 100, Workers: 4, ServiceTime: stats.Latency{Mean: 500}, Failures: map[string]int64{}}
	stalled := stats.OpSummary{Rate: 0, Workers: 4, Failures: map[string]int64{"timeout": 12}}
	r := &Report{Ops: map[string]stats.OpSummary{"read": lagging},
		Config: []config.Entry{{Key: "workload.opTimeout", Value: "300ms"}},
		Client: Client{CPUCores: 0.2, GOMAXPROCS: 4, NumCPU: 4},
		Series: []stats.Point{{Ops: map[string]stats.OpSummary{"read": calm}}, {Ops: map[string]stats.OpSummary{"read": stalled}},
			{Ops: map[string]stats.OpSummary{"read": stalled}}, {Ops: map[string]stats.OpSummary{"read": calm}}}}
	if got := GeneratorBound(r); len(got) != 0 {
		t.Errorf("a store timing out judged the generator's: %v", got)
	}
	if w := lagWarning("read", lagging, r.Series, false, 300*time.Millisecond, room{}); strings.Contains(w, "generator's own") {
		t.Errorf("warning blames the generator: %s", w)
	}
}
