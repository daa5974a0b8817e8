package source

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ndbench/ndbench/internal/config"
)

// runFileSource watches path for st until the test ends; Run must then return nil.
func runFileSource(t *testing.T, st *config.Store, path string) (*File, *errorLog) {
	t.Helper()
	errs := &errorLog{}
	f, err := OpenFile(st, path, errs.add)
	if err != nil {
		t.Fatalf("OpenFile: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	// Run reads the file once at start; wait for it, so that a test's edit is seen by the
	// watch and not by that first read.
	waitFor(t, "the first read", func() bool { return !f.Status().CheckedAt.IsZero() })
	return f, errs
}

func replaceByRename(t *testing.T, path, text string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func editInPlace(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestFileSourceAppliesEdits(t *testing.T) {
	tests := []struct {
		name     string
		file     string
		initial  string
		edit     func(t *testing.T, path, text string)
		text     string
		wantRate float64
	}{
		{name: "yaml edited in place", file: "config.yaml", initial: "workload:\n  readRate: 1\n",
			edit: editInPlace, text: "workload:\n  readRate: 250\n", wantRate: 250},
		{name: "yaml replaced by rename", file: "config.yaml", initial: "workload:\n  readRate: 1\n",
			edit: replaceByRename, text: "workload:\n  readRate: 260\n", wantRate: 260},
		{name: "properties edited in place", file: "ndbench.properties", initial: "ndbench.config.readRateLimit=1\n",
			edit: editInPlace, text: "ndbench.config.readRateLimit=270\n", wantRate: 270},
		{name: "properties replaced by rename", file: "ndbench.properties", initial: "ndbench.config.readRateLimit=1\n",
			edit: replaceByRename, text: "ndbench.config.readRateLimit=280\n", wantRate: 280},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, tt.file, tt.initial)
			st := config.NewStore(mustLoad(t, inputs{File: path, Env: selectFake}))
			changes := subscribe(st)
			f, errs := runFileSource(t, st, path)
			before := st.Current()

			tt.edit(t, path, tt.text)
			waitFor(t, "the edit to apply", func() bool { return st.Current().Config.Workload.ReadRate == tt.wantRate })

			snap := st.Current()
			if _, src, _ := snap.Value("workload.readRate"); !strings.HasPrefix(src, "file "+path) {
				t.Errorf("source = %q, want file %s", src, path)
			}
			if got := changes.last(); !slices.Equal(got, []string{"workload.readRate"}) {
				t.Errorf("subscribers were told %q changed, want workload.readRate", got)
			}
			if e := errs.all(); len(e) != 0 {
				t.Errorf("errors reported for a valid edit: %v", e)
			}
			// The store publishes before the source records what it applied: wait for the
			// record, which must then say exactly this version.
			waitFor(t, "the source to record the apply", func() bool { return f.Status().Version >= snap.Version })
			if s := f.Status(); s.Failing || s.Version != snap.Version || s.Version <= before.Version || s.AppliedAt.IsZero() {
				t.Errorf("status %+v after applying v%d", s, snap.Version)
			}
		})
	}
}

func TestFileSourceKeepsLastGoodConfig(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		change  func(t *testing.T, path string)
		wantErr []string // substrings of the one reported error
	}{
		{
			name:    "invalid yaml value",
			file:    "config.yaml",
			change:  func(t *testing.T, path string) { editInPlace(t, path, "workload:\n  readRate: -5\n  writeRate: 9\n") },
			wantErr: []string{"workload.readRate", `"-5"`, "(from file "},
		},
		{
			name:    "unknown key",
			file:    "config.yaml",
			change:  func(t *testing.T, path string) { replaceByRename(t, path, "workload:\n  readRat: 5\n") },
			wantErr: []string{"workload.readRat", "(from file "},
		},
		{
			name:    "yaml syntax error",
			file:    "config.yaml",
			change:  func(t *testing.T, path string) { editInPlace(t, path, "workload: [\n") },
			wantErr: []string{"read config file "},
		},
		{
			name: "properties file with a foreign key",
			file: "ndbench.properties",
			change: func(t *testing.T, path string) {
				editInPlace(t, path, "ndbench.config.readRateLimit=9\nother.key=1\n")
			},
			wantErr: []string{"other.key", "(from file "},
		},
		{
			name: "file removed",
			file: "config.yaml",
			change: func(t *testing.T, path string) {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: []string{"no such file"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			initial := "workload:\n  readRate: 1\n"
			if strings.HasSuffix(tt.file, ".properties") {
				initial = "ndbench.config.readRateLimit=1\n"
			}
			path := writeFile(t, tt.file, initial)
			st := config.NewStore(mustLoad(t, inputs{File: path, Env: selectFake}))
			changes := subscribe(st)
			f, errs := runFileSource(t, st, path)
			before := st.Current()

			tt.change(t, path)
			waitFor(t, "the rejection to be reported", func() bool { return len(errs.all()) > 0 })

			err := errs.all()[0]
			for _, want := range append(tt.wantErr, "config file "+path+" not applied") {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			if st.Current() != before || changes.last() != nil {
				t.Errorf("the store changed to v%d (subscribers told %q)", st.Current().Version, changes.last())
			}
			if s := f.Status(); !s.Failing || s.Error != err.Error() || s.ErrorAt.IsZero() {
				t.Errorf("status %+v, want failing with the reported error", s)
			}

			// The next good version of the file applies and clears the failure.
			fixed := strings.ReplaceAll(initial, "=1", "=42")
			fixed = strings.ReplaceAll(fixed, ": 1", ": 42")
			replaceByRename(t, path, fixed)
			waitFor(t, "the fixed file to apply", func() bool { return st.Current().Config.Workload.ReadRate == 42 })
			// The store publishes before the source records the apply (CI saw the status
			// read in between): wait for the record of this version, then judge it.
			applied := st.Current().Version
			waitFor(t, "the source to record the apply", func() bool { return f.Status().Version >= applied })
			if s := f.Status(); s.Failing || s.Version != applied {
				t.Errorf("status still failing after a good edit: %+v", s)
			}
			if n := len(errs.all()); n != 1 {
				t.Errorf("%d errors reported, want the one rejection: %v", n, errs.all())
			}
		})
	}
}

// TestFileSourceAppliesOnlyChanges: an edit made between Load and the watch is applied when
// the source starts, and events that leave the file's content as it is apply nothing (no
// new version, no notification).
func TestFileSourceAppliesOnlyChanges(t *testing.T) {
	tests := []struct {
		name        string
		early       string                          // content written before the source starts; "" = none
		noise       func(t *testing.T, path string) // events that leave the content as it is
		wantRate    float64
		wantVersion uint64
	}{
		{name: "edit before the watch started", early: "workload:\n  readRate: 33\n", wantRate: 33, wantVersion: 2},
		{name: "same content renamed over the file", wantRate: 1, wantVersion: 1,
			noise: func(t *testing.T, path string) { replaceByRename(t, path, "workload:\n  readRate: 1\n") }},
		{name: "another file in the directory", wantRate: 1, wantVersion: 1,
			noise: func(t *testing.T, path string) {
				editInPlace(t, filepath.Join(filepath.Dir(path), "other.yaml"), "x: 1\n")
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, "config.yaml", "workload:\n  readRate: 1\n")
			st := config.NewStore(mustLoad(t, inputs{File: path, Env: selectFake}))
			changes := subscribe(st)
			if tt.early != "" {
				editInPlace(t, path, tt.early)
			}
			f, errs := runFileSource(t, st, path)
			if tt.noise != nil {
				checked := f.Status().CheckedAt
				tt.noise(t, path)
				waitFor(t, "the file to be read again", func() bool { return f.Status().CheckedAt.After(checked) })
			}

			if s := st.Current(); s.Config.Workload.ReadRate != tt.wantRate || s.Version != tt.wantVersion {
				t.Errorf("readRate %v at v%d, want %v at v%d", s.Config.Workload.ReadRate, s.Version, tt.wantRate, tt.wantVersion)
			}
			if tt.wantVersion == 1 && changes.last() != nil {
				t.Errorf("subscribers told %q changed", changes.last())
			}
			if s := f.Status(); s.Failing || len(errs.all()) != 0 {
				t.Errorf("status %+v, errors %v", s, errs.all())
			}
		})
	}
}
