package cli

import (
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// --settle 0 asks for no settle: the search's settings must not turn it back into the
// default (the flag's own default, 2s, is what "not given" means).
func TestAutotuneSettleFlag(t *testing.T) {
	for _, settle := range []time.Duration{0, 300 * time.Millisecond, 2 * time.Second} {
		f := &autotuneFlags{settle: settle, percentile: 99, latency: 10 * time.Millisecond,
			maxErrors: "1%", minAchieved: "97%", tolerance: "2%", start: 1000, minRate: 1, maxRate: 1e6,
			window: 5 * time.Second, maxWindow: time.Minute, confirm: 15 * time.Second, recover: 30 * time.Second}
		s, err := f.settings(&cobra.Command{})
		if err != nil {
			t.Fatalf("--settle %v: %v", settle, err)
		}
		if got := s.WithDefaults().Settle; got != settle {
			t.Errorf("--settle %v: the search settles %v", settle, got)
		}
	}
}
