package merge

import (
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/stats"
)

// recordedInterval returns one node second as a busy node sends it: read, write and
// backfill plus a class mixing two operations (its class series and one per operation),
// each with `per` operations at a latency spread of its own, encoded as the interval log
// does.
func recordedInterval(tb testing.TB, seed uint64, per int) stats.EncodedInterval {
	tb.Helper()
	c := stats.NewCollector(stats.Config{Shards: 2})
	start := time.Unix(1_800_000_000, 0)
	c.ResetAt(start)
	rng := rand.New(rand.NewPCG(seed, 11))
	record := func(name string, median time.Duration, tail float64) {
		op, err := c.Register(name)
		if err != nil {
			tb.Fatal(err)
		}
		c.SetTarget(op, float64(per), 16)
		for i := range per {
			svc := time.Duration(float64(median) * (0.5 + rng.ExpFloat64()*0.7))
			if rng.Float64() < 0.01 {
				svc = time.Duration(float64(svc) * tail)
			}
			lag := time.Duration(rng.ExpFloat64() * float64(30*time.Microsecond))
			sh := c.Recorder(op).Shard(i % 2)
			if i%500 == 0 {
				sh.Failure(driver.ClassTimeout)
				continue
			}
			sh.Success(svc+lag, svc)
		}
	}
	record("read", 600*time.Microsecond, 20)
	record("write", 900*time.Microsecond, 10)
	record("backfill", 2*time.Millisecond, 5)
	record("mixed.get", 500*time.Microsecond, 20)
	record("mixed.scan", 8*time.Millisecond, 4)
	// The class series of a mixed class holds its operations' samples too.
	record("mixed", 1500*time.Microsecond, 10)
	iv := c.Tick(start.Add(time.Second))
	e, err := stats.EncodeInterval(iv, 0, start)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// encodedBytes is the size of an interval's histograms as sent (base64 text).
func encodedBytes(e *stats.EncodedInterval) int {
	n := 0
	for _, o := range e.Ops {
		n += len(o.Response) + len(o.Service) + len(o.StartLag)
	}
	return n
}

// BenchmarkMergeNodeInterval is the coordinator's cost per node per second: decoding one
// node's interval (six series of ~5,000 operations each: read, write, backfill, a mixed
// class and its two operations; 18 histograms) and merging it into its slot. Ready runs
// once per simulated second of 100 nodes, its cost shared among them.
func BenchmarkMergeNodeInterval(b *testing.B) {
	const nodes = 100
	var variants []stats.EncodedInterval
	for i := range 8 {
		variants = append(variants, recordedInterval(b, uint64(i+1), 5000))
	}
	ids := make([]string, nodes)
	m := New(Config{})
	for i := range ids {
		ids[i] = fmt.Sprintf("node-%03d", i)
		m.Expect(ids[i], time.Unix(1_800_000_000, 0))
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		sec, n := i/nodes, i%nodes
		e := variants[i%len(variants)]
		e.Seq = uint64(sec)
		e.Start = e.Start.Add(time.Duration(sec) * time.Second)
		e.End = e.End.Add(time.Duration(sec) * time.Second)
		if err := m.Add(ids[n], 0, e); err != nil {
			b.Fatal(err)
		}
		if n == nodes-1 {
			m.Ready(e.End.Add(50 * time.Millisecond))
		}
		i++
	}
	b.ReportMetric(float64(encodedBytes(&variants[0])), "histogram-bytes/interval")
}

var (
	simNodes   = flag.Int("sim.nodes", 0, "TestSimulateCoordinator: nodes to simulate (0 skips it)")
	simSeconds = flag.Int("sim.seconds", 30, "TestSimulateCoordinator: seconds to simulate")
	simPollers = flag.Int("sim.pollers", 1, "TestSimulateCoordinator: goroutines calling Add")
)

// TestSimulateCoordinator measures a coordinator of -sim.nodes nodes: every simulated
// second, each node's recorded interval arrives as the JSON page of GET
// /api/v1/stats/intervals, is decoded, merged (Merger.Add), and the Ready slots are
// ingested into a fleet collector that keeps an interval log (what the fleet's own
// /stats/intervals serves). It reports CPU seconds per simulated second and the peak
// heap. Not a unit test: run it with
//
//	go test ./internal/cluster/merge -run TestSimulateCoordinator -sim.nodes=1000 -v
func TestSimulateCoordinator(t *testing.T) {
	if *simNodes == 0 {
		t.Skip("set -sim.nodes to run the coordinator simulation")
	}
	nodes, seconds := *simNodes, *simSeconds
	// Recorded node seconds, as the JSON pages nodes serve; 16 variants, so nodes differ.
	var pages [][]byte
	var histBytes int
	for i := range 16 {
		e := recordedInterval(t, uint64(i+1), 5000)
		histBytes = encodedBytes(&e)
		b, err := json.Marshal(stats.IntervalsPage{Intervals: []stats.EncodedInterval{e}, Next: 1})
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, b)
	}
	base := time.Unix(1_800_000_000, 0)
	m := New(Config{})
	fleet := stats.NewCollector(stats.Config{Shards: 1})
	fleet.ResetAt(base.Add(-time.Second)) // before slot 0, which has the nodes ticking early in second 0
	log := stats.NewIntervalLog(fleet, 300, 0)
	defer log.Close()
	ids := make([]string, nodes)
	offsets := make([]time.Duration, nodes)
	phases := make([]time.Duration, nodes)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range ids {
		ids[i] = fmt.Sprintf("node-%04d", i)
		offsets[i] = time.Duration(rng.IntN(2000)-1000) * time.Millisecond
		phases[i] = time.Duration(rng.IntN(1000)) * time.Millisecond
		m.Expect(ids[i], base)
	}

	runtime.GC()
	var peakHeap, peakSys uint64
	sample := func() {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		peakHeap, peakSys = max(peakHeap, ms.HeapAlloc), max(peakSys, ms.Sys)
	}
	cpu0 := cpuTime()
	wall0 := time.Now()
	var partial, late int
	var addErr error
	var errOnce sync.Once
	for s := 1; s <= seconds; s++ {
		var wg sync.WaitGroup
		for p := range *simPollers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := p; i < nodes; i += *simPollers {
					var page stats.IntervalsPage
					if err := json.Unmarshal(pages[i%len(pages)], &page); err != nil {
						errOnce.Do(func() { addErr = err })
						return
					}
					e := page.Intervals[0]
					// The node's second s in its own clock, at its phase.
					end := base.Add(time.Duration(s-1)*time.Second + phases[i] + offsets[i])
					e.Seq, e.Start, e.End = uint64(s), end.Add(-time.Second), end
					if err := m.Add(ids[i], offsets[i], e); err != nil {
						errOnce.Do(func() { addErr = err })
						return
					}
				}
			}()
		}
		wg.Wait()
		if addErr != nil {
			t.Fatal(addErr)
		}
		for _, f := range m.Ready(base.Add(time.Duration(s)*time.Second + 100*time.Millisecond)) {
			if f.Late {
				late++
				if err := fleet.IngestCumulative(f.Interval); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if f.Interval.Partial {
				partial++
			}
			if err := fleet.Ingest(f.Interval); err != nil {
				t.Fatal(err)
			}
		}
		sample()
	}
	cpu := cpuTime() - cpu0
	wall := time.Since(wall0)
	cum := fleet.Cumulative().Ops["read"]
	perSec := cpu.Seconds() / float64(seconds)
	t.Logf("%d nodes × %d s: CPU %.3f s per simulated second (wall %.3f s/s, %d pollers, GOMAXPROCS %d); peak heap %.0f MB, peak Sys %.0f MB; peak RSS %s",
		nodes, seconds, perSec, wall.Seconds()/float64(seconds), *simPollers, runtime.GOMAXPROCS(0), float64(peakHeap)/1e6, float64(peakSys)/1e6, peakRSS())
	t.Logf("per node interval: %.0f µs CPU; %d histogram bytes (JSON page %d bytes) per node per second = %.1f MB/s inbound",
		cpu.Seconds()/float64(seconds*nodes)*1e6, histBytes, len(pages[0]), float64(len(pages[0])*nodes)/1e6)
	t.Logf("fleet read: %d ops, p99 %.0f µs; %d slots partial, %d late deliveries; counters %+v", cum.Count, cum.ResponseTime.P99, partial, late, m.Counters())
	if partial != 0 {
		t.Errorf("%d partial slots: every node delivered every second", partial)
	}
}

// cpuTime is the process's user plus system CPU time.
func cpuTime() time.Duration {
	u := report.ReadUsage() // portable: getrusage on Unix, GetProcessTimes on Windows
	return u.User + u.System
}

// peakRSS reads the process's peak resident set from /proc (Linux), "?" elsewhere.
func peakRSS() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}
