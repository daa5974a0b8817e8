// Command integration runs make integration's tests: each package's tests (with the
// integration tag) in a process of its own, several at a time, like `go test -p N`, with
// three differences that cut the stage's wall time without dropping a test:
//
//   - The ndbench binary the fleet tests exec is built once, beside the first jobs, and
//     handed in TEST_NDBENCH_BIN (testserver.BuildNdbench) to the split packages' shards, which
//     wait for it, and to every job started after it is built, instead of cli and cluster
//     each compiling and linking their own.
//   - The packages named by -split have their tests divided among -shards processes of one
//     test binary compiled once (`go test -c`), balanced by the tests' times recorded in a
//     -times file (by count without one). cli and cluster are each ~400 s of tests
//     that mostly wait for runs of whole seconds, and they cannot run their tests in
//     parallel inside one process: a run's verdict reads the process's own CPU time. As
//     separate processes they can. Since they mostly wait, a shard takes -shard-weight
//     of a process against -p.
//   - The packages named by -heavy (those whose servers are JVMs) start in their place in
//     the order given, but at most -heavy-p of them run at a time (three JVMs beside the
//     compile starved Cassandra): while -heavy-p run, the next light job starts instead.
//
// Each job's output is printed whole when it ends, as go test prints a package's; the exit
// status is 1 when any job failed. Usage, from the Makefile:
//
//	go run ./scripts/integration -p 4 -heavy "$(go list JVM...)" -split "$(go list ./internal/cli/)" \
//	  -shards 4 -shard-weight 0.5 -times scripts/integration/testtimes PKG...
//
// and to record the times file from a -json run of it:
//
//	go run ./scripts/integration -split "$(go list ./internal/cli/ ./internal/cluster/)" -times-from run.json
package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	var o options
	flag.Float64Var(&o.p, "p", 3, "test processes at a time, each counted at its weight (a shard at -shard-weight, any other process at 1)")
	flag.StringVar(&o.heavy, "heavy", "", "import paths (space-separated) whose servers are JVMs: started in their place in the order given, at most -heavy-p at a time")
	flag.IntVar(&o.heavyP, "heavy-p", 2, "heavy packages at a time")
	flag.StringVar(&o.split, "split", "", "import paths (space-separated) whose tests are divided among -shards processes")
	flag.IntVar(&o.shards, "shards", 2, "processes per split package")
	flag.Float64Var(&o.shardWeight, "shard-weight", 1, "how much of -p a shard takes: shards mostly wait for runs of whole seconds, so several may share one slot")
	flag.StringVar(&o.timesFile, "times", "", "file of the split packages' test times (lines: import-path test seconds), to balance their shards by time; without it, by count")
	flag.StringVar(&o.timesFrom, "times-from", "", "read a go test -json stream from this file, print the times file of the -split packages' tests, and exit")
	flag.BoolVar(&o.race, "race", true, "build with the race detector")
	flag.StringVar(&o.tags, "tags", "integration", "build tags")
	flag.DurationVar(&o.timeout, "timeout", 20*time.Minute, "each test process's timeout (go test -timeout)")
	flag.BoolVar(&o.json, "json", false, "go test -json output (test2json for the shards), to compare the tests run")
	flag.Parse()
	o.pkgs = flag.Args()
	if o.timesFrom != "" {
		if err := writeTimes(os.Stdout, o.timesFrom, strings.Fields(o.split)); err != nil {
			fmt.Fprintln(os.Stderr, "integration:", err)
			os.Exit(1)
		}
		return
	}
	if err := o.check(); err != nil {
		fmt.Fprintln(os.Stderr, "integration:", err)
		os.Exit(2)
	}
	if o.timesFile != "" {
		var err error
		if o.times, err = readTimes(o.timesFile); err != nil {
			fmt.Fprintln(os.Stderr, "integration: -times:", err)
			os.Exit(2)
		}
	}
	os.Exit(run(context.Background(), o))
}

type options struct {
	p, shardWeight       float64
	heavyP, shards       int
	heavy, split         string
	race, json           bool
	tags                 string
	timesFile, timesFrom string
	timeout              time.Duration
	pkgs                 []string
	// times: the split packages' test times, read from timesFile.
	times testTimes
}

func (o options) check() error {
	switch {
	case o.p < 1:
		return fmt.Errorf("-p is %g: want 1 or more processes at a time", o.p)
	case o.shardWeight <= 0 || o.shardWeight > o.p:
		return fmt.Errorf("-shard-weight is %g: want more than 0 and at most -p (%g)", o.shardWeight, o.p)
	case o.heavyP < 1:
		return fmt.Errorf("-heavy-p is %d: want 1 or more", o.heavyP)
	case o.shards < 1:
		return fmt.Errorf("-shards is %d: want 1 or more", o.shards)
	case len(o.pkgs) == 0:
		return errors.New("no packages given: want import paths (go list ...)")
	}
	// A package named twice would run twice (the order given is the start order, so a
	// list may name a package early and match it again in a later pattern; go list keeps
	// the first).
	seen := make(map[string]bool, len(o.pkgs))
	for _, p := range o.pkgs {
		if seen[p] {
			return fmt.Errorf("package %s is named twice: want each package once", p)
		}
		seen[p] = true
	}
	for _, set := range []struct{ flag, list string }{{"-heavy", o.heavy}, {"-split", o.split}} {
		for _, p := range strings.Fields(set.list) {
			if !contains(o.pkgs, p) {
				return fmt.Errorf("%s names %s, which is not among the packages to test", set.flag, p)
			}
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// job is one test process: a package's `go test`, or one shard of a split package.
type job struct {
	name  string
	heavy bool
	// weight is how much of -p the job takes while it runs.
	weight float64
	// shard: the job runs a compiled test binary, whose passing output go test would not
	// print.
	shard bool
	run   func(ctx context.Context) (out []byte, err error)
	// cpu is the CPU time (user and system) of the job's commands and of the processes
	// they waited for: for a go test job its compile and its test binary.
	cpu time.Duration
	mu  sync.Mutex
}

func (j *job) addCPU(st *os.ProcessState) {
	j.mu.Lock()
	j.cpu += cpuOf(st)
	j.mu.Unlock()
}

func run(ctx context.Context, o options) int {
	began := time.Now()
	tmp, err := os.MkdirTemp("", "ndbench-integration-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration:", err)
		return 1
	}
	defer os.RemoveAll(tmp)

	nb := buildNdbench(ctx, tmp, began)
	jobs := plan(o, tmp, nb)
	status := schedule(ctx, o, jobs, began)
	<-nb.done
	if nb.err != nil {
		fmt.Fprintln(os.Stderr, "integration:", nb.err)
		status = 1
	}
	return status
}

// ndbenchBuild is the ndbench binary the fleet tests exec, built beside the first jobs.
type ndbenchBuild struct {
	done chan struct{}
	bin  string
	err  error
}

// env is the environment for a test process: TEST_NDBENCH_BIN when the build is done (wait:
// after waiting for it). A process started before it is done builds its own if it needs one.
func (b *ndbenchBuild) env(wait bool) []string {
	if wait {
		<-b.done
	}
	select {
	case <-b.done:
		if b.err == nil {
			return append(os.Environ(), "TEST_NDBENCH_BIN="+b.bin)
		}
	default:
	}
	return nil
}

func buildNdbench(ctx context.Context, tmp string, began time.Time) *ndbenchBuild {
	b := &ndbenchBuild{done: make(chan struct{})}
	if bin := os.Getenv("TEST_NDBENCH_BIN"); bin != "" {
		b.bin = bin
		close(b.done)
		return b
	}
	b.bin = filepath.Join(tmp, "ndbench")
	go func() {
		defer close(b.done)
		// A plain build, as testserver.BuildNdbench makes: under -race a node was several
		// times slower and a five-node fleet lost nodes to missed heartbeats.
		if out, err := command(ctx, "", nil, "go", "build", "-o", b.bin, "github.com/ndbench/ndbench/cmd/ndbench"); err != nil {
			b.err = fmt.Errorf("build ndbench: %w\n%s", err, out)
			return
		}
		// On standard error, like every note of the runner's own, so -json's stream stays
		// go test's.
		fmt.Fprintf(os.Stderr, "--- built ndbench for the fleet tests in %.1fs\n", time.Since(began).Seconds())
	}()
	return b
}

// plan lists the jobs in the order they start: the packages in the order given, a split
// package's shards in its place, a heavy package in its place too (the scheduler holds it
// back only while -heavy-p heavy ones run). The stage is bound by its jobs' summed time
// over -p slots, and a long package started late makes its tail: engine, listed after
// cli's and cluster's four shards, started ~290 s in and was among the last jobs to end;
// the JVM packages, all started after every other job had started, made the last ~250 s
// of stop 50's 636 s stage two at a time.
func plan(o options, tmp string, nb *ndbenchBuild) []*job {
	split, heavy := strings.Fields(o.split), strings.Fields(o.heavy)
	var jobs []*job
	for _, pkg := range o.pkgs {
		if contains(split, pkg) {
			jobs = append(jobs, shardJobs(o, pkg, tmp, nb)...)
		} else {
			jobs = append(jobs, goTestJob(o, pkg, contains(heavy, pkg), nb))
		}
	}
	return jobs
}

func (o options) buildFlags() []string {
	var f []string
	if o.race {
		f = append(f, "-race")
	}
	if o.tags != "" {
		f = append(f, "-tags", o.tags)
	}
	return f
}

func goTestJob(o options, pkg string, heavy bool, nb *ndbenchBuild) *job {
	args := append([]string{"test"}, o.buildFlags()...)
	args = append(args, "-count=1", "-timeout", o.timeout.String())
	if o.json {
		args = append(args, "-json")
	}
	args = append(args, pkg)
	j := &job{name: pkg, heavy: heavy, weight: 1}
	j.run = func(ctx context.Context) ([]byte, error) {
		out, st, err := commandCPU(ctx, "", nb.env(false), "go", args...)
		j.addCPU(st)
		return out, err
	}
	return j
}

// compiled is a split package's test binary, compiled once for all its shards, and the
// names of its tests.
type compiled struct {
	once  sync.Once
	bin   string
	dir   string
	tests []string
	env   []string
	// compileCPU: go test -c's CPU time.
	compileCPU time.Duration
	out        []byte
	err        error
}

func shardJobs(o options, pkg, tmp string, nb *ndbenchBuild) []*job {
	c := &compiled{}
	compile := func(ctx context.Context) {
		began := time.Now()
		defer func() {
			fmt.Fprintf(os.Stderr, "--- compiled and listed the tests of %s in %.1fs (go test -c: %.1fs of CPU): %d tests in %d processes%s\n",
				pkg, time.Since(began).Seconds(), c.compileCPU.Seconds(), len(c.tests), o.shards, expected(c.tests, o.times[pkg], o.shards))
		}()
		c.bin = filepath.Join(tmp, strings.ReplaceAll(pkg, "/", "_")+".test")
		args := append([]string{"test", "-c", "-o", c.bin}, o.buildFlags()...)
		var st *os.ProcessState
		c.out, st, c.err = commandCPU(ctx, "", nil, "go", append(args, pkg)...)
		c.compileCPU = cpuOf(st)
		if c.err != nil {
			c.err = fmt.Errorf("go test -c %s: %w", pkg, c.err)
			return
		}
		if _, err := os.Stat(c.bin); err != nil {
			c.err = fmt.Errorf("go test -c %s wrote no test binary (a split package needs tests): %w", pkg, err)
			return
		}
		var dir []byte
		if dir, c.err = command(ctx, "", nil, "go", "list", "-f", "{{.Dir}}", pkg); c.err != nil {
			c.out, c.err = dir, fmt.Errorf("go list %s: %w", pkg, c.err)
			return
		}
		c.dir = strings.TrimSpace(string(dir))
		// -test.list runs TestMain too (cluster's builds ndbench there), so it waits for
		// the binary like the shards.
		c.env = nb.env(true)
		var list []byte
		if list, c.err = command(ctx, c.dir, c.env, c.bin, "-test.list", "."); c.err != nil {
			c.out, c.err = list, fmt.Errorf("list the tests of %s: %w", pkg, c.err)
			return
		}
		c.tests = testNames(list)
		c.err = partitions(c.tests, o.times[pkg], o.shards)
	}
	jobs := make([]*job, o.shards)
	for i := range jobs {
		j := &job{name: fmt.Sprintf("%s (shard %d of %d)", pkg, i+1, o.shards), shard: true, weight: o.shardWeight}
		jobs[i] = j
		j.run = func(ctx context.Context) ([]byte, error) {
			c.once.Do(func() { compile(ctx) })
			if c.err != nil {
				return c.out, c.err
			}
			mine := shard(c.tests, o.times[pkg], i, o.shards)
			if len(mine) == 0 {
				return nil, nil
			}
			args := []string{"-test.paniconexit0", "-test.count=1", "-test.timeout=" + o.timeout.String(), "-test.run", runPattern(mine)}
			if o.json {
				// As go test -json runs a test binary.
				args = append([]string{"tool", "test2json", "-t", "-p", pkg, c.bin, "-test.v=test2json"}, args...)
				out, st, err := commandCPU(ctx, c.dir, c.env, "go", args...)
				j.addCPU(st)
				return out, err
			}
			out, st, err := commandCPU(ctx, c.dir, c.env, c.bin, args...)
			j.addCPU(st)
			return out, err
		}
	}
	return jobs
}

// testNames reads `-test.list` output: one name per line (tests, examples, fuzz targets
// and benchmarks), then "ok" lines of the binary's own.
func testNames(list []byte) []string {
	var names []string
	for _, l := range strings.Split(string(list), "\n") {
		l = strings.TrimSpace(l)
		if ident.MatchString(l) {
			names = append(names, l)
		}
	}
	return names
}

var ident = regexp.MustCompile(`^(Test|Example|Fuzz|Benchmark)[\p{L}\p{N}_]*$`)

// shard is the i-th of n shares of names: each name is in exactly one share. With the
// tests' times (seconds, from an earlier run) the shares are balanced by time, longest
// test first onto the share with the least so far: cli's tests run from under a second to
// ~90 s, so shares of equal counts were 203 s and 285 s of wall. A test without a time
// counts as the median of the known ones (a new test is likelier typical than long).
// Without times, every n-th name from the i-th: the long tests of a file (listed
// together) are spread out.
func shard(names []string, times map[string]float64, i, n int) []string {
	var mine []string
	if len(times) == 0 {
		for j := i; j < len(names); j += n {
			mine = append(mine, names[j])
		}
		return mine
	}
	typical := median(times)
	cost := make(map[string]float64, len(names))
	for _, name := range names {
		c, ok := times[name]
		if !ok {
			c = typical
		}
		cost[name] = c
	}
	// A stable order (longest first, then by name) so every shard process of a run, each
	// computing its share on its own, computes the same partition.
	order := slices.Clone(names)
	slices.SortStableFunc(order, func(a, b string) int {
		if c := cmp.Compare(cost[b], cost[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	load := make([]float64, n)
	for _, name := range order {
		k := slices.Index(load, slices.Min(load))
		load[k] += cost[name]
		if k == i {
			mine = append(mine, name)
		}
	}
	slices.Sort(mine)
	return mine
}

// partitions checks, on the package's real test list, that the n shares hold every test
// exactly once: a split must never drop or repeat a test, and the shares are computed
// apart, each by its own shard.
func partitions(names []string, times map[string]float64, n int) error {
	seen := make(map[string]int, len(names))
	for i := range n {
		for _, name := range shard(names, times, i, n) {
			seen[name]++
		}
	}
	for _, name := range names {
		if seen[name] != 1 {
			return fmt.Errorf("split %d tests into %d shares: %s is in %d of them, want 1", len(names), n, name, seen[name])
		}
		delete(seen, name)
	}
	for name := range seen {
		return fmt.Errorf("split %d tests into %d shares: %s is in a share but not among the tests", len(names), n, name)
	}
	return nil
}

// expected says how many seconds of tests each share holds by the recorded times, so a
// log shows how far a run's shards strayed from them.
func expected(names []string, times map[string]float64, n int) string {
	if len(times) == 0 {
		return ""
	}
	typical := median(times)
	var secs []string
	for i := range n {
		sum := 0.0
		for _, name := range shard(names, times, i, n) {
			if t, ok := times[name]; ok {
				sum += t
			} else {
				sum += typical
			}
		}
		secs = append(secs, fmt.Sprintf("%.0f", sum))
	}
	return fmt.Sprintf(", of %s s of tests by the recorded times", strings.Join(secs, ", "))
}

func median(times map[string]float64) float64 {
	v := make([]float64, 0, len(times))
	for _, t := range times {
		v = append(v, t)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

// testTimes holds each split package's tests' times in seconds, by import path and name.
type testTimes map[string]map[string]float64

// readTimes reads a times file: a line per test, "import-path test seconds"; blank lines
// and lines starting with # are notes.
func readTimes(path string) (testTimes, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseTimes(b, path)
}

func parseTimes(b []byte, path string) (testTimes, error) {
	t := testTimes{}
	for n, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if len(f) != 3 {
			return nil, fmt.Errorf("%s:%d: %q: want \"import-path test seconds\"", path, n+1, l)
		}
		sec, err := strconv.ParseFloat(f[2], 64)
		if err != nil || sec < 0 || math.IsInf(sec, 0) || math.IsNaN(sec) {
			return nil, fmt.Errorf("%s:%d: seconds %q: want a number of 0 or more", path, n+1, f[2])
		}
		if t[f[0]] == nil {
			t[f[0]] = map[string]float64{}
		}
		t[f[0]][f[1]] = sec
	}
	return t, nil
}

// writeTimes prints the times file of the packages' top-level tests from a go test -json
// stream (the runner's -json output), as a run recorded them.
func writeTimes(w io.Writer, jsonPath string, pkgs []string) error {
	f, err := os.Open(jsonPath)
	if err != nil {
		return err
	}
	defer f.Close()
	type event struct {
		Action, Package, Test string
		Elapsed               float64
	}
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var e event
		// Lines that are not events (a shard's own notes) are skipped.
		if json.Unmarshal(sc.Bytes(), &e) != nil || e.Test == "" || strings.Contains(e.Test, "/") ||
			(e.Action != "pass" && e.Action != "fail") || !contains(pkgs, e.Package) {
			continue
		}
		lines = append(lines, fmt.Sprintf("%s %s %.1f", e.Package, e.Test, e.Elapsed))
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("read %s: %w", jsonPath, err)
	}
	if len(lines) == 0 {
		return fmt.Errorf("%s has no passed or failed test of %v", jsonPath, pkgs)
	}
	slices.Sort(lines)
	_, err = fmt.Fprintf(w, "# Test times (s) of the split packages, for scripts/integration -times.\n%s\n", strings.Join(lines, "\n"))
	return err
}

// runPattern matches exactly names at the top level; their subtests all run.
func runPattern(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = regexp.QuoteMeta(n)
	}
	return "^(" + strings.Join(q, "|") + ")$"
}

// command runs name in dir (the current one when empty) with env (this process's when
// nil) and returns its output, standard error included.
func command(ctx context.Context, dir string, env []string, name string, args ...string) ([]byte, error) {
	out, _, err := commandCPU(ctx, dir, env, name, args...)
	return out, err
}

// commandCPU is command, with the finished process's state for its CPU time.
func commandCPU(ctx context.Context, dir string, env []string, name string, args ...string) ([]byte, *os.ProcessState, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	return b.Bytes(), cmd.ProcessState, err
}

type result struct {
	j       *job
	out     []byte
	err     error
	elapsed time.Duration
}

// schedule runs the jobs in their order while their weights sum to at most o.p (one
// always runs), and a heavy job only when fewer than o.heavyP heavy ones run. It returns
// the exit status.
func schedule(ctx context.Context, o options, jobs []*job, began time.Time) int {
	done := make(chan result)
	running, heavyRunning, status := 0, 0, 0
	used := 0.0
	var times []result
	for len(jobs) > 0 || running > 0 {
		for {
			i := next(jobs, heavyRunning < o.heavyP)
			// A small tolerance: weights like 1/3 do not sum exactly.
			if i < 0 || (running > 0 && used+jobs[i].weight > o.p+1e-9) {
				break
			}
			j := jobs[i]
			jobs = append(jobs[:i:i], jobs[i+1:]...)
			running++
			used += j.weight
			if j.heavy {
				heavyRunning++
			}
			go func() {
				t := time.Now()
				out, err := j.run(ctx)
				done <- result{j: j, out: out, err: err, elapsed: time.Since(t)}
			}()
		}
		r := <-done
		running--
		used -= r.j.weight
		if r.j.heavy {
			heavyRunning--
		}
		times = append(times, r)
		report(o, r)
		if r.err != nil {
			status = 1
		}
	}
	// On standard error, so -json's stream stays go test's. CPU is the job's processes'
	// (a split package's compile is reported on its own line, not in its shards).
	sort.Slice(times, func(a, b int) bool { return times[a].elapsed > times[b].elapsed })
	fmt.Fprintf(os.Stderr, "--- integration: %d test processes in %.0fs, %g at a time, a shard counted as %g (wall, CPU user+sys):\n", len(times), time.Since(began).Seconds(), o.p, o.shardWeight)
	for _, r := range times {
		fmt.Fprintf(os.Stderr, "    %6.1fs %6.1fs %s\n", r.elapsed.Seconds(), r.j.cpu.Seconds(), r.j.name)
	}
	return status
}

// next is the index of the first job that may start, or -1.
func next(jobs []*job, heavyMayStart bool) int {
	for i, j := range jobs {
		if !j.heavy || heavyMayStart {
			return i
		}
	}
	return -1
}

// report prints a job's output as go test does: all of it when it failed or when -json
// asks for the events, and one line when it passed.
func report(o options, r result) {
	switch {
	case o.json, r.err != nil, !r.j.shard:
		os.Stdout.Write(r.out)
		if r.err != nil && r.j.shard && !o.json {
			fmt.Printf("FAIL\t%s\t%.3fs: %v\n", r.j.name, r.elapsed.Seconds(), r.err)
		}
	default:
		fmt.Printf("ok  \t%s\t%.3fs\n", r.j.name, r.elapsed.Seconds())
	}
}

func cpuOf(st *os.ProcessState) time.Duration {
	if st == nil {
		return 0
	}
	return st.UserTime() + st.SystemTime()
}
