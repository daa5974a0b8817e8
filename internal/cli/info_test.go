package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestConfigFits100Columns: `ndbench config` fits 100 columns (issue 36: a config file's
// path as the source and a long URL as a value made 203-column lines): a value or source
// wider than its column continues under it on the next lines, nothing of it lost, and
// --wide keeps each key on one line.
func TestConfigFits100Columns(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a-rather-long-directory-name", "for", "the", "benchmark", "configuration")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "service-benchmark-config.yaml")
	prefix := "service-benchmark/tenant-with-a-rather-long-name/region-eu-west-1/items-under-test/"
	if err := os.WriteFile(cfg, []byte("driver: {name: memory}\nworkload: {readRate: 100, keyPrefix: \""+prefix+"\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"defaults", []string{"--driver", "memory"}},
		{"long file path and value", []string{"-c", cfg}},
		{"long values from --set", []string{"-c", cfg, "--set", "workload.readMix=read:90,rmw:5,scan:5,delete:1,insert:1,write:1",
			"--set", "workload.keyPrefix=a key prefix with spaces: tenant a-tenant-with-a-long-name, region eu-west-1, table items"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, js, errOut := ndbench(t, nil, append([]string{"config", "--json"}, tc.args...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			var want struct {
				Entries []struct{ Key, Value, Source string }
			}
			if err := json.Unmarshal([]byte(js), &want); err != nil {
				t.Fatal(err)
			}
			_, out, _ := ndbench(t, nil, append([]string{"config"}, tc.args...)...)
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			for _, l := range lines {
				if n := utf8.RuneCountInString(l); n > consoleWidth {
					t.Errorf("a line of %d columns: %q", n, l)
				}
			}
			// Each entry's value and source, read down their columns, are whole.
			header := lines[0]
			vcol, scol := strings.Index(header, "VALUE"), strings.Index(header, "SOURCE")
			cell := func(l string, from, to int) string {
				r := []rune(l)
				if from >= len(r) {
					return ""
				}
				return strings.TrimSpace(string(r[from:min(to, len(r))]))
			}
			type row struct{ key, value, source string }
			var rows []row
			for _, l := range lines[1:] {
				if strings.HasPrefix(l, "threshold: ") || strings.HasPrefix(l, "note: ") || strings.HasPrefix(l, "  ") && len(rows) == 0 {
					break
				}
				if key := cell(l, 0, vcol); key != "" {
					rows = append(rows, row{key: key})
				}
				r := &rows[len(rows)-1]
				r.value += cell(l, vcol, scol)
				r.source += cell(l, scol, 1<<20)
			}
			if len(rows) != len(want.Entries) {
				t.Fatalf("%d rows, want %d entries:\n%s", len(rows), len(want.Entries), out)
			}
			squeeze := func(s string) string { return strings.Join(strings.Fields(s), "") }
			for i, e := range want.Entries {
				if got := rows[i]; got.key != e.Key || squeeze(got.value) != squeeze(e.Value) || squeeze(got.source) != squeeze(e.Source) {
					t.Errorf("row %d reads %q = %q from %q, want %q = %q from %q", i, got.key, got.value, got.source, e.Key, e.Value, e.Source)
				}
			}
			// --wide: a line a key, whatever its width.
			_, wide, _ := ndbench(t, nil, append([]string{"config", "--wide"}, tc.args...)...)
			for _, e := range want.Entries {
				if !strings.Contains(wide, e.Value+"  ") && !strings.Contains(wide, e.Value+" ") {
					t.Errorf("--wide does not print %s's value %q on one line", e.Key, e.Value)
				}
			}
		})
	}
}

// TestErrorsFitATerminal: on a terminal an error message wraps at 100 columns like the
// rest of the console (an unknown key's list of allowed keys ran to 400 columns; a run's
// INVALID verdict to 200), every word kept and each line of a several-line message under
// "error: "; piped, each line stays whole for what reads it.
func TestErrorsFitATerminal(t *testing.T) {
	args := []string{"config", "--driver", "memory", "--set", "workload.nosuch=1", "--set", "workload.readRate=-5"}
	for _, tty := range []bool{true, false} {
		var out, errOut bytes.Buffer
		if code := execute(context.Background(), args, &streams{out: &out, err: &errOut, tty: tty}); code != 2 {
			t.Fatalf("tty %v: exit %d, want 2: %s", tty, code, errOut.String())
		}
		var piped bytes.Buffer
		execute(context.Background(), args, &streams{out: &out, err: &piped})
		long := 0
		for _, l := range strings.Split(strings.TrimSuffix(errOut.String(), "\n"), "\n") {
			if n := utf8.RuneCountInString(l); n > consoleWidth {
				long++
				if tty {
					t.Errorf("a line of %d columns on a terminal: %q", n, l)
				}
			} else if tty && !strings.HasPrefix(l, "error: ") && !strings.HasPrefix(l, "       ") && !strings.HasPrefix(l, "did you mean") {
				t.Errorf("a line out of the message's column: %q", l)
			}
		}
		if !tty && long == 0 {
			t.Errorf("piped, the message was wrapped:\n%s", errOut.String())
		}
		if got, want := strings.Fields(errOut.String()), strings.Fields(piped.String()); strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("tty %v: the words differ from the piped message:\n%s\n%s", tty, errOut.String(), piped.String())
		}
	}
}
