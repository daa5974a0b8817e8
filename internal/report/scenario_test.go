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

// TestGeneratorBound: a saturated client and start lag with free workers make a run
// invalid; a store that stalled holding every worker does not.
func TestGeneratorBound(t *testing.T) {
	lagging := stats.OpSummary{Count: 1000, Rate: 100, Workers: 8,
		ResponseTime: stats.Latency{P50: 20000, P99: 50000}, ServiceTime: stats.Latency{Mean: 1000}, StartLag: stats.Latency{P50: 15000, P99: 40000}}
	r := &Report{Ops: map[string]stats.OpSummary{"read": lagging},
		Client: Client{CPUCores: 0.2, GOMAXPROCS: 4, NumCPU: 4},
		Series: []stats.Point{{Ops: map[string]stats.OpSummary{"read": {Rate: 100, Workers: 8, ServiceTime: stats.Latency{Mean: 1000}}}}}}
	if got := GeneratorBound(r); len(got) != 1 || !strings.Contains(got[0], "generator's own") {
		t.Errorf("lag with free workers: %v", got)
	}
	// Only the tail started late (a GC pause, a busy moment): warned, not invalid.
	tail := lagging
	tail.StartLag.P50 = 10
	r.Ops["read"] = tail
	if got := GeneratorBound(r); len(got) != 0 {
		t.Errorf("a late tail alone: %v", got)
	}
	r.Ops["read"] = lagging
	// One second in which every worker sat in the store: a stall, the store's result.
	r.Series = append(r.Series, stats.Point{Ops: map[string]stats.OpSummary{"read": {Rate: 100, Workers: 8, ServiceTime: stats.Latency{Mean: 3e6}}}})
	if got := GeneratorBound(r); len(got) != 0 {
		t.Errorf("store stall: %v", got)
	}
	r.Client.CPUCores = 3.8
	if got := GeneratorBound(r); len(got) != 1 || !strings.Contains(got[0], "cores busy") {
		t.Errorf("saturated client: %v", got)
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
