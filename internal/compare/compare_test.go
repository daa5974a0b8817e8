package compare

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/stats"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// second is one interval of a synthetic run: a read class at rate ops/s with the given
// error count and latency (µs, response; service is 90% of it).
type second struct {
	rate   float64
	errors int64
	p99    float64
}

func summary(count, errors int64, seconds, p99 float64) stats.OpSummary {
	lat := stats.Latency{P50: p99 / 2, P95: p99 * 0.8, P99: p99, P995: p99 * 1.1, P999: p99 * 1.3, Max: p99 * 2, Mean: p99 / 2}
	svc := lat
	svc.P99 *= 0.9
	s := stats.OpSummary{Count: count, Errors: errors, ResponseTime: lat, ServiceTime: svc}
	if seconds > 0 {
		s.Rate = float64(count) / seconds
	}
	return s
}

// synthetic builds a report whose read series has one point per second, and whole-run
// figures from them (a p99 that is the median of the seconds', which is what a merged
// histogram of similar seconds gives).
func synthetic(secs []second) *report.Report {
	r := &report.Report{FormatVersion: report.Version, Started: t0, Driver: report.Driver{Name: "memory"}, Ops: map[string]stats.OpSummary{}}
	var count, errs int64
	var p99s []float64
	for i, s := range secs {
		c := int64(s.rate)
		count += c
		errs += s.errors
		p99s = append(p99s, s.p99)
		r.Series = append(r.Series, stats.Point{Time: t0.Add(time.Duration(i+1) * time.Second), Ops: map[string]stats.OpSummary{
			"read": summary(c, s.errors, 1, s.p99),
		}})
	}
	r.Seconds = float64(len(secs))
	r.Ended = t0.Add(time.Duration(len(secs)) * time.Second)
	r.Ops["read"] = summary(count, errs, r.Seconds, median(p99s))
	r.Ops["write"] = stats.OpSummary{} // disabled in both: not listed
	return r
}

func median(xs []float64) float64 {
	s := append([]float64{}, xs...)
	for i := range s { // insertion sort: tiny inputs
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	return s[len(s)/2]
}

// run makes n seconds at 1000 ops/s with a p99 of p99 µs and 5% noise.
func run(rng *rand.Rand, n int, p99 float64) []second {
	out := make([]second, n)
	for i := range out {
		out[i] = second{rate: 1000 + math.Round(rng.NormFloat64()*10), p99: math.Round(p99 * (1 + 0.05*rng.NormFloat64()))}
	}
	return out
}

func defaults(conds ...string) Options {
	c, err := ParseConditions(conds)
	if err != nil {
		panic(err) // test inputs are fixed
	}
	return Options{Latency: Response, Alpha: DefaultAlpha, MinIntervals: DefaultMinIntervals, Conditions: c}
}

func metric(t *testing.T, r *Result, series, name string) Metric {
	t.Helper()
	m, err := r.find(series, name)
	if err != nil {
		t.Fatalf("%v; result: %+v", err, r.Series)
	}
	return m
}

// TestRegressionIsSignificantAndFails: a 20% p99 regression over 30 seconds is
// significant and trips read.p99 > +10%; the same distribution twice is neither.
func TestRegressionIsSignificantAndFails(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	base := synthetic(run(rng, 30, 2000))
	worse := synthetic(run(rng, 30, 2400))
	same := synthetic(run(rng, 30, 2000))

	res, err := Compare(base, worse, defaults("read.p99 > +10%"))
	if err != nil {
		t.Fatal(err)
	}
	m := metric(t, res, "read", "p99")
	if !m.Tested || !m.Significant || m.DiffPct == nil || *m.DiffPct < 10 {
		t.Errorf("20%% regression: %+v", m)
	}
	if !res.Failed || !res.Conditions[0].Triggered {
		t.Errorf("read.p99 > +10%% did not trigger: %+v", res.Conditions)
	}

	res, err = Compare(base, same, defaults("read.p99 > +10%"))
	if err != nil {
		t.Fatal(err)
	}
	// At alpha 0.05 one same-distribution pair in twenty is significant on any one
	// metric (with this seed p99's p is 0.03, a 3% change): the gate also needs the change
	// to pass its bound, so noise alone does not fail it.
	if m := metric(t, res, "read", "p99"); m.DiffPct == nil || math.Abs(*m.DiffPct) > 10 {
		t.Errorf("same distribution: %+v", m)
	}
	if res.Failed {
		t.Errorf("same distribution failed: %+v", res.Conditions)
	}
	// The same seconds in another order: nothing to tell them apart.
	shuffled := synthetic(run(rand.New(rand.NewPCG(7, 8)), 30, 2000))
	rng.Shuffle(len(shuffled.Series), func(i, j int) { shuffled.Series[i], shuffled.Series[j] = shuffled.Series[j], shuffled.Series[i] })
	res, err = Compare(base, shuffled, defaults())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range res.Series {
		for _, m := range s.Metrics {
			if m.Significant || m.P == nil || *m.P < 0.99 {
				t.Errorf("identical seconds reordered: %s.%s p=%v", s.Name, m.Name, m.P)
			}
		}
	}
	for _, s := range res.Series {
		if s.Name == "write" {
			t.Errorf("a class with no operations in either run is listed: %+v", s)
		}
	}
}

// TestBeyondBoundButNotSignificant: a change past the bound that the intervals cannot
// tell from noise does not fail, unless FailInsignificant asks for it.
func TestBeyondBoundButNotSignificant(t *testing.T) {
	// Seconds take one of two latencies; the candidate has two more slow seconds of 12,
	// so its whole-run p99 (the median second here) is 50% higher, but the ranks overlap
	// (U = 60 of 144, p = 0.44).
	var b, c []second
	for i := range 12 {
		b = append(b, second{rate: 1000, p99: []float64{1000, 1500}[min(i/7, 1)]})
		c = append(c, second{rate: 1000, p99: []float64{1000, 1500}[min(i/5, 1)]})
	}
	base, cand := synthetic(b), synthetic(c)
	res, err := Compare(base, cand, defaults("read.p99 > +10%"))
	if err != nil {
		t.Fatal(err)
	}
	m := metric(t, res, "read", "p99")
	if !m.Tested || m.Significant || m.DiffPct == nil || *m.DiffPct < 10 {
		t.Fatalf("want a change beyond 10%% that is not significant: %+v", m)
	}
	if res.Failed || !strings.Contains(res.Conditions[0].Reason, "not significant") {
		t.Errorf("an insignificant change failed the gate: %+v", res.Conditions)
	}
	// Twelve seconds a run: the reason says the runs were too short to decide, not
	// "within run-to-run noise" (a 10× p99 passed that way reads as a broken gate).
	if r := res.Conditions[0].Reason; !strings.Contains(r, "over only 12 and 12 seconds") || !strings.Contains(r, "longer runs decide") || strings.Contains(r, "noise") {
		t.Errorf("reason for short runs: %s", r)
	}
	opt := defaults("read.p99 > +10%")
	opt.FailInsignificant = true
	if res, _ := Compare(base, cand, opt); !res.Failed {
		t.Errorf("FailInsignificant: did not trigger: %+v", res.Conditions)
	}
}

// TestTooFewIntervalsNeverPassSilently: below MinIntervals nothing is tested, the result
// warns, and a relative condition past its bound triggers on the bound alone.
func TestTooFewIntervalsNeverPassSilently(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	base, cand := synthetic(run(rng, 5, 2000)), synthetic(run(rng, 5, 3000))
	res, err := Compare(base, cand, defaults("read.p99 > +10%"))
	if err != nil {
		t.Fatal(err)
	}
	m := metric(t, res, "read", "p99")
	if m.Tested || m.P != nil || !strings.Contains(m.Note, "fewer than 10") {
		t.Errorf("tested with 5 intervals: %+v", m)
	}
	if len(res.Warnings) == 0 || !strings.Contains(res.Warnings[0], "too few") {
		t.Errorf("no warning about too few intervals: %v", res.Warnings)
	}
	if !res.Failed || !strings.Contains(res.Conditions[0].Reason, "bound alone") {
		t.Errorf("condition passed without a test: %+v", res.Conditions)
	}

	// With no series at all (an older or trimmed report): values, no test, said so.
	cand.Series = nil
	res, err = Compare(base, cand, defaults())
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) == 0 || !strings.Contains(res.Warnings[0], "no per-second intervals") {
		t.Errorf("missing intervals not reported: %v", res.Warnings)
	}
	if m := metric(t, res, "read", "p99"); m.Tested || m.Candidate == 0 {
		t.Errorf("without intervals: %+v", m)
	}
}

// TestSamplesOnlyFromTheMeasuredSpan: warm-up points before Started and the partial last
// interval are not samples.
func TestSamplesOnlyFromTheMeasuredSpan(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	r := synthetic(run(rng, 12, 2000))
	warm := stats.Point{Time: t0.Add(-time.Second), Ops: map[string]stats.OpSummary{"read": summary(1000, 0, 1, 9e6)}}
	partial := stats.Point{Time: r.Ended.Add(100 * time.Millisecond), Ops: map[string]stats.OpSummary{"read": summary(10, 0, 0.1, 9e6)}}
	r.Series = append([]stats.Point{warm}, r.Series...)
	r.Ended = partial.Time
	r.Series = append(r.Series, partial)
	got := samplesOf(r).intervals("read")
	if len(got) != 12 {
		t.Fatalf("%d samples, want the 12 whole seconds of the span", len(got))
	}
	for _, s := range got {
		if s.ResponseTime.P99 == 9e6 {
			t.Errorf("a warm-up or partial interval is a sample: %+v", s)
		}
	}
}

// TestServiceLatency: --latency service compares service times.
func TestServiceLatency(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	base, cand := synthetic(run(rng, 12, 2000)), synthetic(run(rng, 12, 2000))
	opt := defaults()
	opt.Latency = Service
	res, err := Compare(base, cand, opt)
	if err != nil {
		t.Fatal(err)
	}
	if m := metric(t, res, "read", "p99"); m.Baseline != base.Ops["read"].ServiceTime.P99 {
		t.Errorf("service p99 %v, want %v", m.Baseline, base.Ops["read"].ServiceTime.P99)
	}
}

// TestAbsoluteConditions: unsigned bounds judge the candidate's own figure.
func TestAbsoluteConditions(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	b, c := run(rng, 12, 2000), run(rng, 12, 2000)
	for i := range c {
		c[i].errors = 2 // 0.2% of ~1000
	}
	base, cand := synthetic(b), synthetic(c)
	tests := []struct {
		cond string
		want bool
	}{
		{"read.errors > 0.1%", true},
		{"read.errors > 0.5%", false},
		{"read.errors > 0.001", true},
		{"read.errors > +50%", true}, // from 0: an infinite relative change, significant
		{"read.p99 > 20ms", false},
		{"read.p99 > 1ms", true},
		{"read.p99 >= 1500us", true},
		{"read.rate < 900", false},
		{"read.rate < 2000/s", true},
		{"read.rate < -5%", false},
		{"read.p99 > +1s", false},
	}
	for _, tt := range tests {
		res, err := Compare(base, cand, defaults(tt.cond))
		if err != nil {
			t.Fatalf("%s: %v", tt.cond, err)
		}
		if res.Failed != tt.want {
			t.Errorf("%s: triggered %v, want %v (%s)", tt.cond, res.Failed, tt.want, res.Conditions[0].Reason)
		}
	}
}

// TestConditionNamesAreChecked: a misspelled metric or series is an error naming the
// valid ones (k6 #1526 passed silently on a misspelled metric).
func TestConditionNamesAreChecked(t *testing.T) {
	parseErrs := []struct{ cond, want string }{
		{"read.p98 > +10%", "p99.9"},
		{"read.p90 > +10%", "p95 is the nearest"},
		{"read.latency > +10%", "metrics: rate, errors"},
		{"p99 > +10%", "<series>.<metric>"},
		{"read.p99 +10%", "op one of"},
		{"read.p99 > ", "one bound"},
		{"read.p99 > 10%", "+10%"},
		{"read.p99 > 20", "duration"},
		{"read.rate < 5%", "ambiguous"},
		{"read.rate < fast", "operations per second"},
		{"read.errors > 150", "at most 1"},
		{"read.p99 > +10%%", "percentage"},
	}
	for _, tt := range parseErrs {
		_, err := ParseConditions([]string{tt.cond})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: error %v, want one containing %q", tt.cond, err, tt.want)
		}
	}
	rng := rand.New(rand.NewPCG(17, 18))
	base, cand := synthetic(run(rng, 12, 2000)), synthetic(run(rng, 12, 2000))
	base.Ops["scan"] = summary(10, 0, 1, 100) // only in the baseline
	for _, cond := range []string{"raed.p99 > +10%", "scan.p99 > +10%"} {
		_, err := Compare(base, cand, defaults(cond))
		if err == nil || !strings.Contains(err.Error(), "series in both: read, write") {
			t.Errorf("%q: error %v, want one listing the series in both", cond, err)
		}
	}
}

func TestParseConditions(t *testing.T) {
	got, err := ParseConditions([]string{"read.p99 > +10%, write.errors>0.1%", "search.byTitle.p99.9 <= -2.5ms", "read.p999>=+5%"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Condition{
		{Text: "read.p99 > +10%", Series: "read", Metric: "p99", Op: ">", Kind: Relative, Bound: 0.1},
		{Text: "write.errors>0.1%", Series: "write", Metric: "errors", Op: ">", Kind: Absolute, Bound: 0.001},
		{Text: "search.byTitle.p99.9 <= -2.5ms", Series: "search.byTitle", Metric: "p99.9", Op: "<=", Kind: Difference, Bound: -2500},
		{Text: "read.p999>=+5%", Series: "read", Metric: "p99.9", Op: ">=", Kind: Relative, Bound: 0.05},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d conditions: %+v", len(got), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("condition %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestDecodeChecksTheFormat(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{"formatVersion": 99, "ops": {"read": {}}}`, "formatVersion 99"},
		{`{"ops": {"read": {}}}`, "not an ndbench report"},
		{`[1,2]`, "not a JSON report"},
		{`{"formatVersion": 1, "ops": {}}`, "no op classes"},
	} {
		_, err := Decode(strings.NewReader(tt.in))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want %q", tt.in, err, tt.want)
		}
	}
}

// TestFormats: each format carries the verdict and the figures; JSON decodes.
func TestFormats(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	res, err := Compare(synthetic(run(rng, 12, 2000)), synthetic(run(rng, 12, 2600)), defaults("read.p99 > +10%"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Formats() {
		var b bytes.Buffer
		if err := Write(&b, res, f); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out := b.String()
		for _, want := range []string{"read.p99 > +10%", "p99"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s output lacks %q:\n%s", f, want, out)
			}
		}
		if f != JSON && !strings.Contains(out, "FAIL: 1 of 1") {
			t.Errorf("%s output lacks the verdict:\n%s", f, out)
		}
	}
	var b bytes.Buffer
	_ = Write(&b, res, JSON)
	var back Result
	if err := json.Unmarshal(b.Bytes(), &back); err != nil || !back.Failed || len(back.Series) != 1 {
		t.Errorf("JSON does not round-trip (%v): %+v", err, back)
	}
	if err := Write(&b, res, "yaml"); err == nil {
		t.Error("an unknown format gave no error")
	}
}

func TestOptionsAreChecked(t *testing.T) {
	r := synthetic(run(rand.New(rand.NewPCG(1, 1)), 3, 1000))
	for _, opt := range []Options{
		{Latency: "total", Alpha: 0.05, MinIntervals: 10},
		{Latency: Response, Alpha: 0, MinIntervals: 10},
		{Latency: Response, Alpha: 1.5, MinIntervals: 10},
		{Latency: Response, Alpha: 0.05, MinIntervals: 1},
	} {
		if _, err := Compare(r, r, opt); err == nil {
			t.Errorf("%+v accepted", opt)
		}
	}
	other := *r
	other.FormatVersion = 2
	if _, err := Compare(r, &other, defaults()); err == nil || !strings.Contains(err.Error(), "formatVersion") {
		t.Errorf("different formatVersions: %v", err)
	}
}

// TestPhaseSeriesAreNotTested: the backfill's figures come from its phase, before the
// measured span, so the span's intervals (in which it did not run) are no samples of it.
func TestPhaseSeriesAreNotTested(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	base, cand := synthetic(run(rng, 12, 2000)), synthetic(run(rng, 12, 2000))
	for _, r := range []*report.Report{base, cand} {
		r.Ops["backfill"] = summary(5000, 0, 2, 300)
		r.Phases = []report.Phase{{Name: "backfill"}}
		for _, p := range r.Series {
			p.Ops["backfill"] = stats.OpSummary{}
		}
	}
	res, err := Compare(base, cand, defaults())
	if err != nil {
		t.Fatal(err)
	}
	m := metric(t, res, "backfill", "rate")
	if m.Tested || m.Baseline != 2500 {
		t.Errorf("backfill rate: %+v", m)
	}
	if !strings.Contains(strings.Join(res.Warnings, "\n"), "earlier phase") {
		t.Errorf("no note on the backfill: %v", res.Warnings)
	}
}

// TestOperationSeries: a mixed class's operations ("search.byTitle") are series like any
// other, and a condition may name one, metric dots and all.
func TestOperationSeries(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	base, cand := synthetic(run(rng, 12, 2000)), synthetic(run(rng, 12, 4000))
	for _, r := range []*report.Report{base, cand} {
		r.Ops["search.byTitle"] = r.Ops["read"]
		for _, p := range r.Series {
			p.Ops["search.byTitle"] = p.Ops["read"]
		}
	}
	res, err := Compare(base, cand, defaults("search.byTitle.p99.5 > +50%"))
	if err != nil {
		t.Fatal(err)
	}
	if m := metric(t, res, "search.byTitle", "p99.5"); !m.Significant {
		t.Errorf("search.byTitle.p99.5 doubled, not significant: %+v", m)
	}
	if !res.Failed {
		t.Errorf("condition on an operation series did not trigger: %+v", res.Conditions)
	}
}
