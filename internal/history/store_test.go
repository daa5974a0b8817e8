package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// opener makes a fresh database for a test and returns how to open it with the given
// migrations (nil: the released ones); every call opens the same database.
type opener func(t *testing.T) func(ms []migration) *sqlStore

// testStores runs the store's test suite; the SQLite file and PostgreSQL (integration
// tag) both pass it.
func testStores(t *testing.T, open opener) {
	for _, tc := range []struct {
		name string
		fn   func(*testing.T, opener)
	}{
		{"RecordGet", testRecordGet},
		{"ListFilters", testListFilters},
		{"Trend", testTrend},
		{"GetMissing", testGetMissing},
		{"MigrationsApplyOnce", testMigrationsApplyOnce},
		{"UpgradeKeepsRuns", testUpgradeKeepsRuns},
		{"Figures", testFigures},
		{"CheckFindsTheStep", testCheckFindsTheStep},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open) })
	}
}

func TestSQLiteStore(t *testing.T) {
	testStores(t, func(t *testing.T) func([]migration) *sqlStore {
		// A name with characters a file: URI would take apart.
		path := filepath.Join(t.TempDir(), "sub dir #1 50%", "history.db")
		return func(ms []migration) *sqlStore {
			if ms == nil {
				ms = migrations
			}
			s, err := openSQLite(context.Background(), path, ms)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	})
}

// TestSQLiteConcurrentOpen: processes that open a new store at once (two nightly jobs)
// all succeed, and the migration is applied once.
func TestSQLiteConcurrentOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "history.db")
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			s, err := openSQLite(context.Background(), path, migrations)
			if err != nil {
				t.Errorf("open %d: %v", i, err)
				return
			}
			defer s.Close()
			if _, err := s.Record(context.Background(), sampleRun(i, nil, 1)); err != nil {
				t.Errorf("record %d: %v", i, err)
			}
		})
	}
	wg.Wait()
	s, err := openSQLite(context.Background(), path, migrations)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n int
	if err := s.db.QueryRow(`SELECT COUNT(*) FROM schema_version`).Scan(&n); err != nil || n != len(migrations) {
		t.Errorf("schema_version has %d rows (%v), want %d (each migration once)", n, err, len(migrations))
	}
	if runs, err := s.List(context.Background(), Filter{}); err != nil || len(runs) != 4 {
		t.Errorf("%d runs (%v), want 4", len(runs), err)
	}
}

var t0 = time.Date(2026, 11, 1, 22, 0, 0, 0, time.UTC)

// sampleRun is run i of a nightly series: started i days after t0.
func sampleRun(i int, tags map[string]string, p99 float64) *Run {
	return &Run{
		Started: t0.AddDate(0, 0, i), Ended: t0.AddDate(0, 0, i).Add(30 * time.Second), Seconds: 30,
		Kind: "run", Driver: "memory", Version: "v1.2.3",
		Host:    Host{Name: "bench-1", OS: "linux", Arch: "amd64", CPUs: 8},
		Tags:    tags,
		Figures: map[Figure]float64{{"read", "p99"}: p99, {"read", "rate"}: 5000, {"read.get", "p99.9"}: 2 * p99},
		Report:  json.RawMessage(fmt.Sprintf(`{"formatVersion":1,"run":%d}`, i)),
	}
}

func record(t *testing.T, s Store, r *Run) int64 {
	t.Helper()
	id, err := s.Record(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func testRecordGet(t *testing.T, open opener) {
	s := open(t)(nil)
	in := sampleRun(3, map[string]string{"build": "1234", "store": "redis-7.2"}, 1.25)
	in.Histograms = map[string]string{"read.response": "HISTFAAAA"}
	in.Source = "nightly/3.json"
	id := record(t, s, in)
	got, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != id || !got.Started.Equal(in.Started) || !got.Ended.Equal(in.Ended) || got.Seconds != 30 || got.Kind != "run" ||
		got.Driver != "memory" || got.Version != "v1.2.3" || got.Host != in.Host || got.Source != in.Source {
		t.Errorf("got run %+v, want the fields of %+v", got, in)
	}
	if got.Recorded.IsZero() || time.Since(got.Recorded) > time.Hour {
		t.Errorf("recorded at %v, want about now", got.Recorded)
	}
	if !maps.Equal(got.Tags, in.Tags) || !maps.Equal(got.Figures, in.Figures) || !maps.Equal(got.Histograms, in.Histograms) {
		t.Errorf("got tags %v figures %v histograms %v, want %v %v %v", got.Tags, got.Figures, got.Histograms, in.Tags, in.Figures, in.Histograms)
	}
	var rep map[string]int
	if err := json.Unmarshal(got.Report, &rep); err != nil || rep["run"] != 3 {
		t.Errorf("report %s (%v), want the recorded one", got.Report, err)
	}
}

func testListFilters(t *testing.T, open opener) {
	s := open(t)(nil)
	ids := map[int]int64{}
	for i := range 6 {
		store := "redis-7.2"
		if i%2 == 1 {
			store = "redis-8.0"
		}
		r := sampleRun(i, map[string]string{"store": store, "build": fmt.Sprint(100 + i)}, 1)
		if i >= 3 {
			r.Driver, r.Kind, r.Workload = "redis", "serve", "ycsb-b"
		}
		ids[i] = record(t, s, r)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		f    Filter
		want []int // run numbers, oldest first
	}{
		{"all", Filter{}, []int{0, 1, 2, 3, 4, 5}},
		{"one tag", Filter{Tags: map[string]string{"store": "redis-8.0"}}, []int{1, 3, 5}},
		{"two tags", Filter{Tags: map[string]string{"store": "redis-8.0", "build": "103"}}, []int{3}},
		{"no match", Filter{Tags: map[string]string{"store": "cassandra"}}, nil},
		{"since", Filter{Since: t0.AddDate(0, 0, 4)}, []int{4, 5}},
		{"until (exclusive)", Filter{Until: t0.AddDate(0, 0, 2)}, []int{0, 1}},
		{"since and until", Filter{Since: t0.AddDate(0, 0, 1), Until: t0.AddDate(0, 0, 3)}, []int{1, 2}},
		{"limit keeps the newest", Filter{Limit: 2}, []int{4, 5}},
		{"limit and tag", Filter{Tags: map[string]string{"store": "redis-7.2"}, Limit: 2}, []int{2, 4}},
		{"driver", Filter{Driver: "memory"}, []int{0, 1, 2}},
		{"kind", Filter{Kind: "serve"}, []int{3, 4, 5}},
		{"workload and tag", Filter{Workload: "ycsb-b", Tags: map[string]string{"store": "redis-8.0"}}, []int{3, 5}},
		{"unknown driver", Filter{Driver: "nosuch"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			runs, err := s.List(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, r := range runs {
				got = append(got, r.ID)
				if r.Tags["build"] == "" {
					t.Errorf("run %d listed without its tags: %v", r.ID, r.Tags)
				}
			}
			var want []int64
			for _, i := range tc.want {
				want = append(want, ids[i])
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("listed %v, want %v", got, want)
			}
		})
	}
}

func testTrend(t *testing.T, open opener) {
	s := open(t)(nil)
	// Recorded out of order: the trend is in time order whatever the recording order.
	for _, i := range []int{2, 0, 1} {
		record(t, s, sampleRun(i, map[string]string{"store": "redis"}, float64(i+1)))
	}
	other := sampleRun(3, map[string]string{"store": "memcached"}, 9)
	record(t, s, other)
	noFig := sampleRun(4, map[string]string{"store": "redis"}, 0)
	noFig.Figures = map[Figure]float64{{"write", "p99"}: 3}
	record(t, s, noFig)

	pts, err := s.Trend(context.Background(), Filter{Tags: map[string]string{"store": "redis"}}, Figure{"read", "p99"})
	if err != nil {
		t.Fatal(err)
	}
	var vals []float64
	for i, p := range pts {
		vals = append(vals, p.Value)
		if p.Tags["store"] != "redis" || !p.Started.Equal(t0.AddDate(0, 0, i)) {
			t.Errorf("point %d: %+v", i, p)
		}
	}
	if fmt.Sprint(vals) != "[1 2 3]" {
		t.Errorf("read.p99 trend %v, want [1 2 3] (time order, redis runs with the figure only)", vals)
	}
	pts, err = s.Trend(context.Background(), Filter{}, Figure{"read.get", "p99.9"})
	if err != nil || len(pts) != 4 || pts[3].Value != 18 {
		t.Errorf("read.get.p99.9 trend %+v (%v), want 4 points ending at 18", pts, err)
	}
}

// testUpgradeKeepsRuns: a store of schema version 1 (before workload) opened by this
// build gets the new column; its runs keep their data, with no workload.
func testUpgradeKeepsRuns(t *testing.T, open opener) {
	reopen := open(t)
	old := reopen(migrations[:1])
	if _, err := old.db.Exec(old.d.rebind(`INSERT INTO runs (recorded_at, started_at, ended_at, seconds, kind, driver, version, hostname, os, arch, cpus, source, report)
		VALUES (?, ?, ?, 30, 'run', 'memory', 'v1', 'h', 'linux', 'amd64', 2, '', '{}')`),
		old.d.timeArg(t0), old.d.timeArg(t0), old.d.timeArg(t0.Add(30*time.Second))); err != nil {
		t.Fatal(err)
	}
	s := reopen(nil)
	r := sampleRun(1, nil, 1)
	r.Workload = "ycsb-a"
	record(t, s, r)
	runs, err := s.List(context.Background(), Filter{})
	if err != nil || len(runs) != 2 || runs[0].Workload != "" || runs[0].Driver != "memory" || runs[1].Workload != "ycsb-a" {
		t.Fatalf("after the upgrade: %+v (%v), want the old run without a workload and the new one with ycsb-a", runs, err)
	}
	if runs, err := s.List(context.Background(), Filter{Workload: "ycsb-a"}); err != nil || len(runs) != 1 {
		t.Errorf("workload filter after the upgrade: %d runs (%v), want 1", len(runs), err)
	}
}

func testFigures(t *testing.T, open opener) {
	s := open(t)(nil)
	record(t, s, sampleRun(0, map[string]string{"store": "a"}, 1))
	w := sampleRun(1, map[string]string{"store": "b"}, 1)
	w.Figures = map[Figure]float64{{"write", "p50"}: 1}
	record(t, s, w)
	for _, tc := range []struct {
		f    Filter
		want string
	}{
		{Filter{}, "[read.p99 read.rate read.get.p99.9 write.p50]"},
		{Filter{Tags: map[string]string{"store": "b"}}, "[write.p50]"},
		{Filter{Limit: 1}, "[write.p50]"},
		{Filter{Driver: "nosuch"}, "[]"},
	} {
		figs, err := s.Figures(context.Background(), tc.f)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(figs); got != tc.want {
			t.Errorf("Figures(%+v) = %s, want %s", tc.f, got, tc.want)
		}
	}
}

func testGetMissing(t *testing.T, open opener) {
	s := open(t)(nil)
	if _, err := s.Get(context.Background(), 42); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get(42) on an empty store: %v, want ErrNotFound", err)
	}
}

func testMigrationsApplyOnce(t *testing.T, open opener) {
	reopen := open(t)
	s := reopen(nil)
	id := record(t, s, sampleRun(0, nil, 1))
	// Opening again applies nothing; a new version applies once, keeping the data.
	next := migration{version: SchemaVersion() + 1, stmts: map[string][]string{
		"sqlite":   {`CREATE TABLE notes (run_id INTEGER NOT NULL, note TEXT NOT NULL)`},
		"postgres": {`CREATE TABLE notes (run_id BIGINT NOT NULL, note TEXT NOT NULL)`},
	}}
	ms := append(append([]migration(nil), migrations...), next)
	for range 3 {
		s = reopen(ms) // CREATE TABLE notes would fail if applied twice
	}
	rows, err := s.db.Query(`SELECT version FROM schema_version ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var versions []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		versions = append(versions, v)
	}
	if fmt.Sprint(versions) != "[1 2 3]" {
		t.Errorf("schema_version has %v, want [1 2 3] (each migration once)", versions)
	}
	if _, err := s.Get(context.Background(), id); err != nil {
		t.Errorf("the run recorded before the migration: %v", err)
	}
}

// testCheckFindsTheStep is the bar through the store: 30 recorded runs, +20% p99
// from run 21, and a series of another tag without a step in between.
func testCheckFindsTheStep(t *testing.T, open opener) {
	s := open(t)(nil)
	stepped := nightly(11, 30, 21, 0.2, 0.04)
	flat := nightly(12, 30, 0, 0, 0.04)
	for i := range 30 {
		record(t, s, sampleRun(i, map[string]string{"series": "stepped", "build": fmt.Sprint(i + 1)}, stepped[i]))
		record(t, s, sampleRun(i, map[string]string{"series": "flat", "build": fmt.Sprint(i + 1)}, flat[i]))
	}
	for _, tc := range []struct {
		series    string
		regressed bool
	}{{"stepped", true}, {"flat", false}} {
		pts, err := s.Trend(context.Background(), Filter{Tags: map[string]string{"series": tc.series}}, Figure{"read", "p99"})
		if err != nil {
			t.Fatal(err)
		}
		xs := make([]float64, len(pts))
		for i, p := range pts {
			xs[i] = p.Value
		}
		r, err := Check(xs, true, ChangePointOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Regressed != tc.regressed {
			t.Errorf("%s: regressed %v (%+v), want %v", tc.series, r.Regressed, r.ChangePoints, tc.regressed)
		}
		if tc.regressed {
			if cause := pts[r.ChangePoints[r.Cause].Index]; cause.Tags["build"] != "21" {
				t.Errorf("%s: the regression starts at build %s, want 21", tc.series, cause.Tags["build"])
			}
		}
	}
}
