// Package history is ndbench's results store: every recorded run with its figures per
// op class and operation, its tags, the build and machine that measured it and the whole
// report, in an embedded SQLite file by default or in PostgreSQL for a team. A series of
// one figure over runs (a trend) is what change-point detection (EDivisive) judges, so a
// slow drift over many builds is found where every pairwise comparison passes.
package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"
)

// EnvResults names the environment variable that sets the results store when --results
// is not given: a file path or a postgres:// URL.
const EnvResults = "NDBENCH_RESULTS"

// Run is one recorded run.
type Run struct {
	// ID is the store's number for the run, assigned by Record.
	ID int64
	// Recorded is when the run was stored; Started and Ended are the measured span.
	Recorded time.Time
	Started  time.Time
	Ended    time.Time
	Seconds  float64
	// Kind says what produced the run: "run", "import" (a report file), ...
	Kind   string
	Driver string
	// Workload is the name of the workload measured: the --workload preset's, or the
	// scenario's; empty when the configuration came from keys alone.
	Workload string
	Version  string // the ndbench version that measured it
	Host     Host
	Tags     map[string]string
	// Figures are the run's figures keyed by series and metric (see Figure).
	Figures map[Figure]float64
	// Histograms are encoded cumulative histograms keyed by "series.kind" (e.g.
	// "read.response"), when the report carried them.
	Histograms map[string]string
	// Report is the whole JSON report: the configuration and everything else it had.
	Report json.RawMessage
	// Source is the file a run was imported from; empty otherwise.
	Source string
}

// Host is the machine that ran the load generator.
type Host struct {
	Name string
	OS   string
	Arch string
	CPUs int
}

// ThisHost describes the machine this process runs on.
func ThisHost() Host {
	name, _ := os.Hostname()
	return Host{Name: name, OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU()}
}

// Filter selects runs: all the tags must match, so must Driver, Kind and Workload when
// set, and Started must lie in [Since, Until) (a zero bound is open). Limit keeps the
// newest Limit runs (0: all).
type Filter struct {
	Tags     map[string]string
	Driver   string
	Kind     string
	Workload string
	Since    time.Time
	Until    time.Time
	Limit    int
}

// Point is one run's value of a figure, for a trend.
type Point struct {
	RunID   int64
	Started time.Time
	Tags    map[string]string
	Value   float64
}

// Store keeps runs. Implementations are safe for concurrent use.
type Store interface {
	// Record stores run whole (or nothing) and returns its ID.
	Record(ctx context.Context, run *Run) (int64, error)
	// List returns the runs f selects, oldest first, with their tags but without figures,
	// histograms or report.
	List(ctx context.Context, f Filter) ([]Run, error)
	// Get returns one run with everything recorded; ErrNotFound when there is none.
	Get(ctx context.Context, id int64) (*Run, error)
	// Figures returns the figures the runs f selects have, sorted by series and metric.
	Figures(ctx context.Context, f Filter) ([]Figure, error)
	// Trend returns fig's value in every run f selects that has it, oldest first.
	Trend(ctx context.Context, f Filter, fig Figure) ([]Point, error)
	// Close releases the store.
	Close() error
}

// ErrNotFound is returned by Get for an ID no run has.
var ErrNotFound = errors.New("no such run")

// Open opens the store target names and brings its schema up to date: a postgres:// or
// postgresql:// URL selects PostgreSQL, anything else is a SQLite file path (its
// directory is created).
func Open(ctx context.Context, target string) (Store, error) {
	if target == "" {
		return nil, errors.New("open results store: no path or URL given")
	}
	if IsPostgres(target) {
		return openPostgres(ctx, target, migrations)
	}
	return openSQLite(ctx, target, migrations)
}

// IsPostgres reports whether target is a PostgreSQL URL.
func IsPostgres(target string) bool {
	return strings.HasPrefix(target, "postgres://") || strings.HasPrefix(target, "postgresql://")
}

// Display is target as output may show it: a PostgreSQL URL without its password.
func Display(target string) string {
	if IsPostgres(target) {
		return redactURL(target)
	}
	return target
}

// DefaultTarget returns where runs are recorded when no --results is given: env's
// NDBENCH_RESULTS if set, else history.db in the user's data directory
// ($XDG_DATA_HOME/ndbench, or ~/.local/share/ndbench; %LocalAppData%\ndbench on Windows).
// env is in os.Environ's form.
func DefaultTarget(env []string) (string, error) {
	get := func(k string) string {
		for i := len(env) - 1; i >= 0; i-- {
			name, v, ok := strings.Cut(env[i], "=")
			// Windows's variable names are case-insensitive (LOCALAPPDATA, LocalAppData).
			if ok && (name == k || (runtime.GOOS == "windows" && strings.EqualFold(name, k))) {
				return v
			}
		}
		return ""
	}
	if v := get(EnvResults); v != "" {
		return v, nil
	}
	if runtime.GOOS == "windows" {
		if d := get("LocalAppData"); d != "" {
			return filepath.Join(d, "ndbench", "history.db"), nil
		}
	}
	if d := get("XDG_DATA_HOME"); d != "" {
		return filepath.Join(d, "ndbench", "history.db"), nil
	}
	home := get("HOME")
	if home == "" {
		if runtime.GOOS == "windows" {
			home = get("USERPROFILE")
		}
		if home == "" {
			return "", fmt.Errorf("no results store: set --results or %s (no home directory to keep history.db in)", EnvResults)
		}
	}
	return filepath.Join(home, ".local", "share", "ndbench", "history.db"), nil
}

// tagKey reports whether k may be a tag's key: 1-64 letters, digits, '_', '.' or '-',
// as it is typed on command lines and used in filters. A loop rather than a regexp,
// whose compilation at package init cost every ndbench process ~10 M instructions.
func tagKey(k string) bool {
	if len(k) < 1 || len(k) > 64 {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// ParseTag parses KEY=VALUE.
func ParseTag(s string) (key, value string, err error) {
	k, v, ok := strings.Cut(s, "=")
	if !ok {
		return "", "", fmt.Errorf("tag %q: want KEY=VALUE", s)
	}
	if !tagKey(k) {
		return "", "", fmt.Errorf("tag %q: key %q: allowed: 1-64 letters, digits, '_', '.' or '-'", s, k)
	}
	if v == "" || len(v) > 256 {
		return "", "", fmt.Errorf("tag %q: value: allowed: 1-256 characters", s)
	}
	return k, v, nil
}

// ParseTags parses KEY=VALUE tags; a key given twice is an error, so no value is
// silently lost.
func ParseTags(list []string) (map[string]string, error) {
	tags := make(map[string]string, len(list))
	for _, s := range list {
		k, v, err := ParseTag(s)
		if err != nil {
			return nil, err
		}
		if old, dup := tags[k]; dup {
			return nil, fmt.Errorf("tag %q: key %q given twice (%s=%s before)", s, k, k, old)
		}
		tags[k] = v
	}
	return tags, nil
}

// TagsText renders tags as sorted k=v pairs.
func TagsText(tags map[string]string) string {
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + tags[k]
	}
	return strings.Join(parts, " ")
}
