package config

import (
	"strings"
	"testing"
	"time"
)

// TestAutoMaxWorkers: an automatic elastic maximum is what holds the rate at the op
// timeout, capped at max(4 × workers, 64), never below the configured workers; a set
// maximum is taken as given.
func TestAutoMaxWorkers(t *testing.T) {
	for _, tc := range []struct {
		workers, most int
		rate          float64
		timeout       time.Duration
		want          int
	}{
		{4, 0, 7200, 5 * time.Second, 64},    // NDBench's 8b case: capped at 64
		{4, 0, 10, time.Second, 10},          // rate × timeout below the cap
		{4, 0, 1, 100 * time.Millisecond, 4}, // never below workers
		{32, 0, 100000, time.Second, 128},    // 4 × workers above the floor
		{5000, 0, 1e6, time.Second, 10000},   // bounded by the engine's worker limit
		{4, 0, 0, time.Second, 4},            // closed loop never grows
		{4, 10, 7200, 5 * time.Second, 10},   // a set maximum wins
		{4, 2, 7200, 5 * time.Second, 4},     // at most workers: fixed
		{0, 0, 7200, 5 * time.Second, 0},     // no workers, nothing to grow
	} {
		c := ClassSpec{Workers: tc.workers, MaxWorkers: tc.most}
		if got := c.MostWorkers(tc.rate, tc.timeout); got != tc.want {
			t.Errorf("workers %d, maxWorkers %d, rate %v, timeout %v: %d, want %d", tc.workers, tc.most, tc.rate, tc.timeout, got, tc.want)
		}
	}
}

// TestMistypedKeyIsUnknownNotInvalid: a misspelt key is reported as an unknown key with a
// suggestion, from --set and from the environment alike, and its value is never shown
// (under a misspelt name it may be a secret).
func TestMistypedKeyIsUnknownNotInvalid(t *testing.T) {
	for _, src := range []Sources{
		{Sets: []string{"driver.name=fake-kv", "workload.readRat=s3cret"}},
		{Sets: []string{"driver.name=fake-kv"}, Env: []string{"NDBENCH_WORKLOAD_READRAT=s3cret"}},
	} {
		_, err := Load(src)
		if err == nil {
			t.Fatalf("%+v: no error", src)
		}
		msg := err.Error()
		if !strings.Contains(msg, "unknown key") || !strings.Contains(msg, "did you mean") || !strings.Contains(strings.ToLower(msg), "readrate?") {
			t.Errorf("%+v: %s; want an unknown key with a suggestion of readRate", src, msg)
		}
		if strings.Contains(msg, "s3cret") || strings.Contains(msg, "invalid value") {
			t.Errorf("%+v: %s; the value must not be shown or blamed", src, msg)
		}
	}
}
