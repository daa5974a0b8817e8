package autotune

import (
	"encoding/json"
	"strings"
	"testing"
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
