package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Every test of a split package runs in exactly one shard, whatever the count of tests
// and shards, with or without the tests' times (some missing, as for a test added since
// they were recorded), so splitting never drops or repeats a test.
func TestShardsCoverEveryTestOnce(t *testing.T) {
	for _, tc := range []struct{ tests, shards int }{
		{0, 2}, {1, 2}, {2, 2}, {7, 2}, {74, 2}, {46, 3}, {5, 1}, {3, 5}, {112, 4}, {59, 4},
	} {
		names := make([]string, tc.tests)
		times := map[string]float64{}
		for i := range names {
			names[i] = "Test" + strings.Repeat("x", i)
			if i%5 != 4 {
				times[names[i]] = float64(i*37%90) / 3
			}
		}
		for _, timed := range []bool{false, true} {
			var tm map[string]float64
			if timed {
				tm = times
			}
			var all []string
			for i := range tc.shards {
				mine := shard(names, tm, i, tc.shards)
				if !timed && len(mine) > (tc.tests+tc.shards-1)/tc.shards {
					t.Errorf("%d tests in %d shards: shard %d has %d", tc.tests, tc.shards, i, len(mine))
				}
				all = append(all, mine...)
			}
			slices.Sort(all)
			if !slices.Equal(all, names) {
				t.Errorf("%d tests in %d shards (times %v): the shards hold %v", tc.tests, tc.shards, timed, all)
			}
			// The runner's own check on every run agrees.
			if err := partitions(names, tm, tc.shards); err != nil {
				t.Errorf("%d tests in %d shards (times %v): %v", tc.tests, tc.shards, timed, err)
			}
		}
	}
}

// The runner's check refuses a test list with a name twice (a list it cannot split so
// that each runs once: -test.run selects by name).
func TestPartitionsRefusesRepeats(t *testing.T) {
	err := partitions([]string{"TestA", "TestB", "TestA"}, nil, 2)
	if err == nil || !strings.Contains(err.Error(), "TestA is in") {
		t.Errorf("partitions with TestA twice: %v", err)
	}
}

// With the tests' times, shards are balanced by time: the longest shard holds at most the
// even share plus one test (greedy longest-first's bound), where shares of equal counts
// put the long tests together. The times are the shape of cli's: one test of ~90 s, a
// few of 15-35 s, many of a second or two.
func TestShardsBalanceByTime(t *testing.T) {
	times := map[string]float64{"TestAutotune": 89, "TestStall": 35, "TestEtcdTLS": 25, "TestWarmsUp": 22, "TestOutputs": 21}
	var names []string
	for n := range times {
		names = append(names, n)
	}
	for i := range 60 {
		n := fmt.Sprintf("TestShort%02d", i)
		names = append(names, n)
		times[n] = 1 + float64(i%3)
	}
	// Listed as -test.list lists them: a file's tests together, the long ones first.
	slices.Sort(names)
	total, longest := 0.0, 0.0
	for _, s := range times {
		total, longest = total+s, max(longest, s)
	}
	for _, n := range []int{2, 3, 4} {
		load := func(timed bool) float64 {
			var tm map[string]float64
			if timed {
				tm = times
			}
			worst := 0.0
			for i := range n {
				sum := 0.0
				for _, name := range shard(names, tm, i, n) {
					sum += times[name]
				}
				worst = max(worst, sum)
			}
			return worst
		}
		byTime, byCount := load(true), load(false)
		if bound := max(total/float64(n)+3, longest); byTime > bound {
			t.Errorf("%d shards: the longest holds %.0f s of %.0f s, want at most %.0f", n, byTime, total, bound)
		}
		t.Logf("%d shards: longest %.0f s by time, %.0f s by count (even share %.0f s)", n, byTime, byCount, total/float64(n))
	}
}

// Every shard process computes its share on its own, so the partition must not depend on
// map order: the same times give the same shares every time.
func TestShardsAreDeterministic(t *testing.T) {
	times := map[string]float64{}
	var names []string
	for i := range 40 {
		n := fmt.Sprintf("Test%02d", i)
		names = append(names, n)
		times[n] = float64(i % 4) // many ties
	}
	first := shard(names, times, 1, 3)
	for range 20 {
		if got := shard(names, times, 1, 3); !slices.Equal(got, first) {
			t.Fatalf("shard 2 of 3 was %v, then %v", first, got)
		}
	}
}

// The times file: "import-path test seconds" a line, notes and blank lines skipped; a
// malformed line is refused naming the file, the line and what is wanted.
func TestParseTimes(t *testing.T) {
	got, err := parseTimes([]byte("# note\n\np/cli TestA 12.5\np/cli TestB 0\np/cluster TestA 3\n"), "f")
	if err != nil {
		t.Fatal(err)
	}
	want := testTimes{"p/cli": {"TestA": 12.5, "TestB": 0}, "p/cluster": {"TestA": 3}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("parseTimes = %v, want %v", got, want)
	}
	for _, tc := range []struct{ in, want string }{
		{"p/cli TestA\n", `f:1: "p/cli TestA": want "import-path test seconds"`},
		{"\np/cli TestA 1 2\n", `f:2: "p/cli TestA 1 2"`},
		{"p/cli TestA ten\n", `f:1: seconds "ten": want a number of 0 or more`},
		{"p/cli TestA -1\n", `seconds "-1"`},
		{"p/cli TestA NaN\n", `seconds "NaN"`},
	} {
		if _, err := parseTimes([]byte(tc.in), "f"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseTimes(%q) = %v, want an error with %q", tc.in, err, tc.want)
		}
	}
}

// -times-from writes, from a go test -json stream, the top-level tests' times of the
// split packages only, in a file parseTimes reads back.
func TestWriteTimes(t *testing.T) {
	stream := `{"Action":"run","Package":"p/cli","Test":"TestA"}
{"Action":"pass","Package":"p/cli","Test":"TestA/sub","Elapsed":1}
{"Action":"pass","Package":"p/cli","Test":"TestA","Elapsed":12.34}
--- compiled p/cli
{"Action":"fail","Package":"p/cli","Test":"TestB","Elapsed":3}
{"Action":"pass","Package":"p/other","Test":"TestC","Elapsed":5}
{"Action":"pass","Package":"p/cli","Elapsed":20}
`
	path := filepath.Join(t.TempDir(), "run.json")
	if err := os.WriteFile(path, []byte(stream), 0o600); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := writeTimes(&b, path, []string{"p/cli"}); err != nil {
		t.Fatal(err)
	}
	got, err := parseTimes(b.Bytes(), "out")
	if err != nil {
		t.Fatal(err)
	}
	if want := (testTimes{"p/cli": {"TestA": 12.3, "TestB": 3}}); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("times %v, want %v (from %q)", got, want, b.String())
	}
	if err := writeTimes(&b, path, []string{"p/none"}); err == nil {
		t.Error("a stream without the packages' tests gave a times file")
	}
}

// The committed times file parses and holds times for the split packages' tests.
func TestCommittedTimes(t *testing.T) {
	tt, err := readTimes("testtimes")
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range []string{"github.com/ndbench/ndbench/internal/cli", "github.com/ndbench/ndbench/internal/cluster"} {
		if len(tt[pkg]) < 20 {
			t.Errorf("%s: %d tests timed", pkg, len(tt[pkg]))
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

// The packages start in the order given, a split package's shards in its place, and a
// heavy (JVM) package in its place too, marked heavy: moved after every other job, the
// JVM packages made the stage's tail.
func TestPlanOrder(t *testing.T) {
	o := options{shards: 2, split: "p/cli", heavy: "p/cass p/es", pkgs: []string{"p/eng", "p/cass", "p/cli", "p/redis", "p/es"}}
	var got []string
	for _, j := range plan(o, t.TempDir(), &ndbenchBuild{done: make(chan struct{})}) {
		name := j.name
		if j.heavy {
			name += " heavy"
		}
		got = append(got, name)
	}
	want := []string{"p/eng", "p/cass heavy", "p/cli (shard 1 of 2)", "p/cli (shard 2 of 2)", "p/redis", "p/es heavy"}
	if !slices.Equal(got, want) {
		t.Errorf("plan = %v, want %v", got, want)
	}
}

// A heavy job listed early starts early, beside the light ones, and one that may not start
// yet (-heavy-p already running) does not hold back the light jobs after it. Listed H1,
// H2, H3, L1, L2 with p = 3 and heavy-p = 2: H1 and H2 start, H3 waits, and L1 starts
// beside them (H1 and H2 wait for it, so a scheduler that held L1 behind H3 would never
// finish them); H3 starts only after a heavy job ended.
func TestScheduleHeavyInPlace(t *testing.T) {
	l1Started := make(chan struct{})
	var mu sync.Mutex
	heavy, maxHeavy, heavyEnded := 0, 0, 0
	var problems []string
	mk := func(name string, isHeavy bool) *job {
		return &job{name: name, heavy: isHeavy, weight: 1, run: func(context.Context) ([]byte, error) {
			mu.Lock()
			if isHeavy {
				heavy++
				maxHeavy = max(maxHeavy, heavy)
				if name == "H3" && heavyEnded == 0 {
					problems = append(problems, "H3 started while H1 and H2 ran")
				}
			}
			mu.Unlock()
			switch name {
			case "L1":
				close(l1Started)
			case "H1", "H2":
				select {
				case <-l1Started:
				case <-time.After(10 * time.Second):
					mu.Lock()
					problems = append(problems, name+" ran 10 s without L1 starting beside it")
					mu.Unlock()
				}
			}
			mu.Lock()
			if isHeavy {
				heavy--
				heavyEnded++
			}
			mu.Unlock()
			return nil, nil
		}}
	}
	jobs := []*job{mk("H1", true), mk("H2", true), mk("H3", true), mk("L1", false), mk("L2", false)}
	if status := schedule(context.Background(), options{p: 3, heavyP: 2, json: true}, jobs, time.Now()); status != 0 {
		t.Errorf("status %d", status)
	}
	if maxHeavy > 2 || len(problems) > 0 {
		t.Errorf("%d heavy jobs at once (heavy-p 2); %v", maxHeavy, problems)
	}
}

// At most p jobs run at a time, at most heavyP heavy ones, and jobs start in the order
// listed; every job runs once and a failure sets the status.
// With 5 light jobs listed before the heavy ones and p = 3, the first heavy one may start only
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
		return &job{name: name, heavy: isHeavy, weight: 1, run: func(context.Context) ([]byte, error) {
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

// Jobs count at their weights: with p = 2, four shards of weight 0.5 run together, and a
// job of weight 1 after them starts only when two of them have ended. A job heavier than
// p still runs, alone.
func TestScheduleWeights(t *testing.T) {
	var mu sync.Mutex
	used := 0.0
	var shardsTogether int
	running := 0
	var over []string
	mk := func(w float64) *job {
		return &job{name: fmt.Sprint(w), weight: w, run: func(context.Context) ([]byte, error) {
			mu.Lock()
			used += w
			running++
			if running > 1 && used > 2 {
				over = append(over, fmt.Sprintf("%g of p 2 in use with %d running", used, running))
			}
			if w == 0.5 {
				shardsTogether = max(shardsTogether, running)
			}
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			mu.Lock()
			used -= w
			running--
			mu.Unlock()
			return nil, nil
		}}
	}
	jobs := []*job{mk(0.5), mk(0.5), mk(0.5), mk(0.5), mk(1), mk(1), mk(3)}
	if status := schedule(context.Background(), options{p: 2, heavyP: 1, shardWeight: 0.5, json: true}, jobs, time.Now()); status != 0 {
		t.Errorf("status %d", status)
	}
	if shardsTogether != 4 || len(over) > 0 {
		t.Errorf("%d shards of weight 0.5 ran together (want 4 with p 2); over p: %v", shardsTogether, over)
	}
}

// A bad flag is refused naming it, before anything runs.
func TestCheck(t *testing.T) {
	ok := options{p: 3, shardWeight: 1, heavyP: 2, shards: 2, pkgs: []string{"a", "b"}, split: "a", heavy: "b"}
	for _, tc := range []struct {
		name string
		edit func(*options)
		want string
	}{
		{"valid", func(*options) {}, ""},
		{"p", func(o *options) { o.p = 0 }, "-p is 0"},
		{"heavy-p", func(o *options) { o.heavyP = 0 }, "-heavy-p is 0"},
		{"shards", func(o *options) { o.shards = 0 }, "-shards is 0"},
		{"shard weight 0", func(o *options) { o.shardWeight = 0 }, "-shard-weight is 0"},
		{"shard weight over p", func(o *options) { o.shardWeight = 4 }, "-shard-weight is 4: want more than 0 and at most -p (3)"},
		{"no packages", func(o *options) { o.pkgs = nil }, "no packages"},
		{"package twice", func(o *options) { o.pkgs = []string{"a", "b", "a"} }, "package a is named twice"},
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
