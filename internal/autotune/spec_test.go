package autotune

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// A ratio or a duration may be written as a number in a request body or a scenario
// (YAML `minAchieved: 0.8` arrives as a JSON number): it means what the same text in
// quotes means, and a value of another kind is an error that says what is allowed.
func TestSpecTakesNumbersAsText(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		check      func(t *testing.T, s Settings)
		err        string
	}{
		{"ratios as numbers", `{"minAchieved": 0.8, "maxErrors": 0.05, "tolerance": 0.1}`, func(t *testing.T, s Settings) {
			if s.SLA.MinAchieved != 0.8 || s.SLA.MaxErrors != 0.05 || s.Tolerance != 0.1 {
				t.Errorf("minAchieved %v, maxErrors %v, tolerance %v; want 0.8, 0.05, 0.1", s.SLA.MinAchieved, s.SLA.MaxErrors, s.Tolerance)
			}
		}, ""},
		{"the same as text", `{"minAchieved": "80%", "maxErrors": "5%", "tolerance": "10%"}`, func(t *testing.T, s Settings) {
			if s.SLA.MinAchieved != 0.8 || s.SLA.MaxErrors != 0.05 || s.Tolerance != 0.1 {
				t.Errorf("minAchieved %v, maxErrors %v, tolerance %v; want 0.8, 0.05, 0.1", s.SLA.MinAchieved, s.SLA.MaxErrors, s.Tolerance)
			}
		}, ""},
		{"a class's SLA as a number", `{"sla": {"write": {"achieved": 0.9}}}`, func(t *testing.T, s Settings) {
			if s.Classes["write"].MinAchieved != 0.9 {
				t.Errorf("write's minAchieved %v; want 0.9", s.Classes["write"].MinAchieved)
			}
		}, ""},
		{"a duration without its unit", `{"window": 5}`, nil, "window"},
		{"a boolean", `{"minAchieved": true}`, nil, "allowed: a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var spec Spec
			err := json.Unmarshal([]byte(tc.body), &spec)
			var s Settings
			if err == nil {
				s, err = spec.Settings()
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v; want one with %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, s)
		})
	}
}

// settleRecorder is the simulated store, noting the settle every probe was asked for.
type settleRecorder struct {
	*sim
	settles map[time.Duration]int
}

func (r settleRecorder) Probe(ctx context.Context, rate float64, p ProbeSpec) (Measurement, error) {
	r.settles[p.Settle]++
	return r.sim.Probe(ctx, rate, p)
}

// A settle of zero asked for (a request's or a scenario's "settle: 0s") is zero, not the
// default: the settings' zero value means "default", so the zero asked for must survive
// every fill of the defaults, the search's own included.
func TestSettleOfZeroIsNone(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       time.Duration
	}{
		{"settle 0s", `{"settle": "0s", "start": 1000, "latency": "10ms"}`, 0},
		{"settle 0", `{"settle": 0, "start": 1000, "latency": "10ms"}`, 0},
		{"settle 500ms", `{"settle": "500ms", "start": 1000, "latency": "10ms"}`, 500 * time.Millisecond},
		{"no settle", `{"start": 1000, "latency": "10ms"}`, 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var spec Spec
			if err := json.Unmarshal([]byte(tc.body), &spec); err != nil {
				t.Fatal(err)
			}
			s, err := spec.Settings()
			if err != nil {
				t.Fatal(err)
			}
			if got := s.WithDefaults().WithDefaults().Settle; got != tc.want {
				t.Errorf("settings' settle %v, want %v", got, tc.want)
			}
			rec := settleRecorder{&sim{capacity: 5000}, map[time.Duration]int{}}
			r := Search(context.Background(), rec, s)
			if r.Status != StatusFound {
				t.Fatalf("status %s: %s", r.Status, r.Message)
			}
			for settle, n := range rec.settles {
				// A step after a violation settles longer (settle × tries): a multiple.
				if tc.want == 0 && settle != 0 || tc.want != 0 && settle%tc.want != 0 {
					t.Errorf("%d probes settled %v, want %v (or a multiple after a violation)", n, settle, tc.want)
				}
			}
			if r.Settings.Settle != tc.want {
				t.Errorf("the result's settings say settle %v, want %v", r.Settings.Settle, tc.want)
			}
		})
	}
}
