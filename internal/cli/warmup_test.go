package cli

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/report"
)

// TestEveryEntryPointWarmsUp: workload.warmup is honoured by every command that runs load,
// through the one run sequence: the report records the warm-up and sets its figures
// apart as a phase of their own, and the measured load comes after it. serve --start
// (with and without a backfill first), scenario and autotune skipped it before.
func TestEveryEntryPointWarmsUp(t *testing.T) {
	const warmup = 700 * time.Millisecond
	load := []string{"--driver", "memory", "--set", "workload.warmup=700ms", "--set", "workload.readRate=500",
		"--set", "workload.writeEnabled=false", "--set", "workload.numKeys=500"}
	scenarioFile := writeScenario(t, `
config:
  driver: {name: memory}
  workload: {warmup: 700ms, readRate: 500, writeEnabled: false, numKeys: 500}
phases: [{name: p, duration: 1s}]
`)
	serve := func(extra ...string) func(t *testing.T, rep string) {
		return func(t *testing.T, rep string) {
			args := append(append([]string{"--listen", "127.0.0.1:0", "--start", "--report", rep}, load...), extra...)
			base, out, errOut, stop := startServe(t, nil, args...)
			// Until the load runs and its warm-up has ended, then a measured second.
			deadline := time.Now().Add(15 * time.Second)
			for {
				var st struct {
					ReadsRunning   bool      `json:"readsRunning"`
					WarmingUpUntil time.Time `json:"warmingUpUntil"`
				}
				code, body := get(t, base+"/api/v1/status", "")
				if err := json.Unmarshal(body, &st); code != 200 || err != nil {
					t.Fatalf("/api/v1/status: %d %s", code, body)
				}
				if st.ReadsRunning && st.WarmingUpUntil.IsZero() {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the load never ran past a warm-up: %+v\nstderr: %s", st, errOut)
				}
				time.Sleep(50 * time.Millisecond)
			}
			time.Sleep(time.Second)
			if code := stop(); code != 0 {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
			}
		}
	}
	command := func(args ...string) func(t *testing.T, rep string) {
		return func(t *testing.T, rep string) {
			// The verdict is not what this test judges: on a machine busy with -race, a
			// scenario can be invalid for the generator's lag (exit 4). A usage or config
			// error (2), or a cut-short run (3), is a failure all the same.
			code, out, errOut := ndbench(t, nil, append(args, "--report", rep)...)
			if code == 2 || code == 3 {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
			}
		}
	}
	for _, c := range []struct {
		name string
		run  func(t *testing.T, rep string)
		// phases are the phases the report sets apart before the measured load.
		phases []string
	}{
		{"run", command(append([]string{"run", "--duration", "1s"}, load...)...), []string{"warmup"}},
		{"run --backfill", command(append([]string{"run", "--duration", "1s", "--backfill"}, load...)...), []string{"backfill", "warmup"}},
		{"serve --start", serve(), []string{"warmup"}},
		{"serve --start --backfill", serve("--backfill"), []string{"backfill", "warmup"}},
		{"scenario", command("scenario", "run", scenarioFile), []string{"warmup"}},
		{"autotune", command(append([]string{"autotune", "--start", "100", "--max-rate", "200", "--settle", "100ms",
			"--window", "1s", "--max-window", "1s", "--confirm", "1s", "--tolerance", "50%", "--latency", "1s"}, load...)...), []string{"warmup"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rep := filepath.Join(t.TempDir(), "r.json")
			c.run(t, rep)
			r := readReport(t, rep)
			if r.WarmupSeconds != warmup.Seconds() {
				t.Errorf("warmupSeconds %v, want %v", r.WarmupSeconds, warmup.Seconds())
			}
			var names []string
			var wu *report.Phase
			for i, p := range r.Phases {
				names = append(names, p.Name)
				if p.Name == "warmup" {
					wu = &r.Phases[i]
				}
			}
			if !slices.Equal(names, c.phases) {
				t.Fatalf("phases %v, want %v", names, c.phases)
			}
			if wu.Ops["read"].Count == 0 || wu.Seconds < 0.6 || r.Started.Before(wu.Ended) {
				t.Errorf("warm-up phase %+v (measured from %v): want ~0.7 s of reads before the measured load", wu, r.Started)
			}
		})
	}
}
