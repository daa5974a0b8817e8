package cli

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	_ "github.com/ndbench/ndbench/drivers/pebble"
	"github.com/ndbench/ndbench/internal/verdict"
)

// TestRunYCSBPresetsOnPebble: `ndbench run --driver pebble --workload ycsb-X` says what
// YCSB's workload runs, in the words a user reads: E's header and summary name the read
// class's scans (1-100 keys each) and the write class's inserts, and no scan finds nothing
// after the load phase; D's keyspace line counts its inserts, numKeys plus the write
// class's operations; F names its rmw and reports its two parts, one of each per rmw.
// Pebble runs in the process, so the command runs in it too.
func TestRunYCSBPresetsOnPebble(t *testing.T) {
	tests := []struct {
		preset string
		// want are phrases of the output, each on one line or wrapped (blanks collapsed).
		want []string
	}{
		{"ycsb-e", []string{
			"driver pebble, 1000 keys, 1000 B values, reads (scan) 4 workers at 950/s, writes (insert) 4 workers at 50/s",
			"backfill done: 1000 of 1000 keys written in",
			"ran scan: each reads 1-100 keys (uniform; fewer at the keyspace's end) in key order from a key of the pattern",
			"ran insert: each writes a new key beyond the keyspace",
		}},
		{"ycsb-d", []string{
			"driver pebble, 1000 keys, 1000 B values, reads 4 workers at 950/s, writes (insert) 4 workers at 50/s",
			"ran insert: each writes a new key beyond the keyspace",
		}},
		{"ycsb-f", []string{
			"driver pebble, 1000 keys, 1000 B values, reads 4 workers at 500/s, writes (rmw) 4 workers at 500/s",
			"ran rmw: each reads a key and writes it, timed as one and as write.rmw.read and write.rmw.write",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.preset, func(t *testing.T) {
			rep := filepath.Join(t.TempDir(), "r.json")
			code, out, errOut := ndbench(t, nil, "run", "--driver", "pebble", "--set", "drivers.pebble.path="+t.TempDir(),
				"--workload", tc.preset, "--duration", "2s", "--report", rep)
			// Exit 4 is a starved machine's verdict (the generator could not keep the
			// schedule), not the workload's: what the run did is still what it says.
			if code != verdict.Pass && code != verdict.Invalid {
				t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
			}
			flat := strings.Join(strings.Fields(out), " ")
			for _, w := range tc.want {
				if !strings.Contains(flat, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			r := readReport(t, rep)
			rd, wr := r.Ops["read"], r.Ops["write"]
			if rd.Count == 0 || wr.Count == 0 || rd.Errors+wr.Errors != 0 {
				t.Fatalf("read class %d ops, write class %d ops, %d errors; want both, none failed", rd.Count, wr.Count, rd.Errors+wr.Errors)
			}
			// The summary's row of a class: op, attempted, succeeded, rate/s, errors, misses.
			row := func(op string) []string {
				m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(op) + ` +(\d+) +(\d+) +\d+ +(\d+) +(\d+)$`).FindStringSubmatch(out)
				if m == nil {
					t.Fatalf("no summary row for %s:\n%s", op, out)
				}
				return m[1:]
			}
			switch tc.preset {
			case "ycsb-e":
				// After the load phase every start key has keys after it in pebble's order.
				if got := row("read"); got[3] != "0" {
					t.Errorf("%s of %s scans read no key after the load phase; want none", got[3], got[1])
				}
				fallthrough
			case "ycsb-d":
				ins := row("write")[1]
				n, _ := strconv.ParseInt(ins, 10, 64)
				want := "keyspace: " + strconv.FormatInt(1000+n, 10) + " keys (numKeys 1000 + " + ins + " inserted)"
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q after %s inserts:\n%s", want, ins, out)
				}
			case "ycsb-f":
				rmw := row("write")
				for _, part := range []string{"write.rmw.read", "write.rmw.write"} {
					if got := row(part); got[0] != rmw[0] || got[1] != rmw[1] {
						t.Errorf("%s: %s attempted, %s succeeded; want one per rmw (%s, %s)", part, got[0], got[1], rmw[0], rmw[1])
					}
				}
				if strings.Contains(out, "keyspace:") {
					t.Errorf("F inserts nothing, but the output has a keyspace line:\n%s", out)
				}
			}
		})
	}
}
