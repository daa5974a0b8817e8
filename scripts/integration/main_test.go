package main

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Every test of a split package runs in exactly one shard, whatever the count of tests
// and shards, so splitting never drops or repeats a test.
func TestShardsCoverEveryTestOnce(t *testing.T) {
	for _, tc := range []struct{ tests, shards int }{
		{0, 2}, {1, 2}, {2, 2}, {7, 2}, {74, 2}, {46, 3}, {5, 1}, {3, 5},
	} {
		names := make([]string, tc.tests)
		for i := range names {
			names[i] = "Test" + strings.Repeat("x", i)
		}
		var all []string
		for i := range tc.shards {
			mine := shard(names, i, tc.shards)
			if len(mine) > (tc.tests+tc.shards-1)/tc.shards {
				t.Errorf("%d tests in %d shards: shard %d has %d", tc.tests, tc.shards, i, len(mine))
			}
			all = append(all, mine...)
		}
		slices.Sort(all)
		if !slices.Equal(all, names) {
			t.Errorf("%d tests in %d shards: the shards hold %v", tc.tests, tc.shards, all)
		}
	}
}

// A shard's -test.run pattern selects its top-level tests exactly: not a test whose name
// merely starts with one of them (TestFleet against TestFleetJoins), and every subtest
// of a selected test (go test matches subtests level by level).
func TestRunPatternMatchesExactly(t *testing.T) {
	re := regexp.MustCompile(runPattern([]string{"TestFleet", "ExampleRun_second", "FuzzParse"}))
	for name, want := range map[string]bool{
		"TestFleet": true, "ExampleRun_second": true, "FuzzParse": true,
		"TestFleetJoins": false, "XTestFleet": false, "ExampleRun": false, "TestOther": false,
	} {
		if got := re.MatchString(name); got != want {
			t.Errorf("%s matched %v, want %v", name, got, want)
		}
	}
}

// -test.list prints every test, example, fuzz target and benchmark, one a line; the
// binary's own lines (TestMain's, "ok ...") are not tests.
func TestTestNames(t *testing.T) {
	list := "TestA\nExampleB\nFuzzC\nBenchmarkD\nTest_e2\nok  \tpkg\t0.01s\nsome log line\n\n"
	want := []string{"TestA", "ExampleB", "FuzzC", "BenchmarkD", "Test_e2"}
	if got := testNames([]byte(list)); !slices.Equal(got, want) {
		t.Errorf("testNames = %v, want %v", got, want)
	}
}

// The packages start in the order given, a split package's shards in its place, the
// heavy (JVM) packages last.
func TestPlanOrder(t *testing.T) {
	o := options{shards: 2, split: "p/cli", heavy: "p/cass p/es", pkgs: []string{"p/eng", "p/cass", "p/cli", "p/redis", "p/es"}}
	var got []string
	for _, j := range plan(o, t.TempDir(), &ndbenchBuild{done: make(chan struct{})}) {
		got = append(got, j.name)
	}
	want := []string{"p/eng", "p/cli (shard 1 of 2)", "p/cli (shard 2 of 2)", "p/redis", "p/cass", "p/es"}
	if !slices.Equal(got, want) {
		t.Errorf("plan = %v, want %v", got, want)
	}
}

// At most p jobs run at a time, at most heavyP heavy ones, and a heavy job starts only
// after every other job started; every job runs once and a failure sets the status.
// With 5 light jobs before the heavy ones and p = 3, the first heavy one may start only
// once 3 light ones have finished (the 4th and 5th started as the 1st and 2nd ended). A
// light job's finish is counted before its run returns, which comes before the scheduler
// starts the next job, so the count is exact; counting starts inside the jobs was not
// (the scheduler may start the 5th light job and then a heavy one before the 5th job's
// goroutine has counted itself: the merged main's CI failed on that).
func TestScheduleLimits(t *testing.T) {
	var mu sync.Mutex
	running, heavy, maxRunning, maxHeavy, ran := 0, 0, 0, 0, 0
	lightFinished := 0
	var heavyEarly bool
	mk := func(name string, isHeavy, fail bool) *job {
		return &job{name: name, heavy: isHeavy, run: func(context.Context) ([]byte, error) {
			mu.Lock()
			running++
			ran++
			if isHeavy {
				heavy++
				if lightFinished < 3 {
					heavyEarly = true
				}
			}
			maxRunning, maxHeavy = max(maxRunning, running), max(maxHeavy, heavy)
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			mu.Lock()
			running--
			if isHeavy {
				heavy--
			} else {
				lightFinished++
			}
			mu.Unlock()
			if fail {
				return []byte("--- FAIL: TestX\n"), context.DeadlineExceeded
			}
			return []byte("ok\n"), nil
		}}
	}
	var jobs []*job
	for i := range 5 {
		jobs = append(jobs, mk("light", false, i == 3))
	}
	for range 4 {
		jobs = append(jobs, mk("heavy", true, false))
	}
	status := schedule(context.Background(), options{p: 3, heavyP: 2, json: true}, jobs, time.Now())
	if status != 1 {
		t.Errorf("status %d with a failed job, want 1", status)
	}
	if ran != 9 || maxRunning > 3 || maxHeavy > 2 || heavyEarly {
		t.Errorf("ran %d of 9, at most %d at a time (p 3), %d heavy (heavy-p 2), a heavy one before the others: %v",
			ran, maxRunning, maxHeavy, heavyEarly)
	}
}

// A bad flag is refused naming it, before anything runs.
func TestCheck(t *testing.T) {
	ok := options{p: 3, heavyP: 2, shards: 2, pkgs: []string{"a", "b"}, split: "a", heavy: "b"}
	for _, tc := range []struct {
		name string
		edit func(*options)
		want string
	}{
		{"valid", func(*options) {}, ""},
		{"p", func(o *options) { o.p = 0 }, "-p is 0"},
		{"heavy-p", func(o *options) { o.heavyP = 0 }, "-heavy-p is 0"},
		{"shards", func(o *options) { o.shards = 0 }, "-shards is 0"},
		{"no packages", func(o *options) { o.pkgs = nil }, "no packages"},
		{"split outside", func(o *options) { o.split = "c" }, "-split names c"},
		{"heavy outside", func(o *options) { o.heavy = "a c" }, "-heavy names c"},
	} {
		o := ok
		tc.edit(&o)
		err := o.check()
		if (err == nil) != (tc.want == "") || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: check() = %v, want %q", tc.name, err, tc.want)
		}
	}
}
