package engine

import (
	"context"
	"encoding/binary"
	"hash/fnv"
	"math"
	mrand "math/rand"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	ycsbgen "github.com/pingcap/go-ycsb/pkg/generator"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/config/presets"
)

// The YCSB presets are run through the engine against the memory store on simulated
// time, and what the store is asked (which operations, which keys, how long the scans)
// is compared with a YCSB run emulated from go-ycsb's generators
// (github.com/pingcap/go-ycsb/pkg/generator) composed as YCSB's CoreWorkload composes
// them: a DiscreteGenerator picks each operation by the workload file's proportions, the
// request distribution picks its key, a uniform generator a scan's length in 1..100, and
// inserts take the next key of an acknowledged counter. go-ycsb's own CoreWorkload cannot
// be driven instead: it seeds every thread from the wall clock, so no run of it repeats.
//
// Each comparison is a two-sample chi-square test over bins of consecutive values (keys,
// key ages, lengths, operation kinds) merged until each holds ycsbMinBin draws of the two
// samples together. The level of each is ycsbCrossAlpha / ycsbCrossTests, so the whole
// test raises a false alarm at most once in 10,000 runs on any seeds. The seeds are fixed
// (workload.seed, the emulation's source), so a run repeats up to the order in which the
// engine's workers take their slots.

const (
	ycsbCrossAlpha = 1e-4
	ycsbCrossTests = 20 // at most this many comparisons: the Bonferroni bound
	ycsbMinBin     = 40
	// ycsbCrossRun is how long each preset runs, simulated: at the presets' 1,000
	// operations a second, 20,000 operations.
	ycsbCrossRun = 20 * time.Second
)

// ycsbFile is what one of YCSB's core workload files sets (workloads/workloada .. f):
// the operation proportions and the request distribution; every one sets recordcount
// and operationcount 1000.
type ycsbFile struct {
	read, update, insert, scan, rmw float64
	distribution                    string
}

var ycsbFiles = map[string]ycsbFile{
	"ycsb-a": {read: 0.5, update: 0.5, distribution: "zipfian"},
	"ycsb-b": {read: 0.95, update: 0.05, distribution: "zipfian"},
	"ycsb-c": {read: 1, distribution: "zipfian"},
	"ycsb-d": {read: 0.95, insert: 0.05, distribution: "latest"},
	"ycsb-e": {scan: 0.95, insert: 0.05, distribution: "zipfian"},
	"ycsb-f": {read: 0.5, rmw: 0.5, distribution: "zipfian"},
}

// The operation kinds of YCSB's CoreWorkload, in the order it adds them to its chooser.
var ycsbKinds = []string{"read", "update", "insert", "scan", "rmw"}

// ycsbSample is what one side did: operations by kind, the keys of the operations that
// draw one from the request distribution (reads, updates, scans, rmw: one key each), the
// same keys as ages (the newest key's index minus the key, for latest) and the scans'
// lengths.
type ycsbSample struct {
	ops      map[string]int64
	keys     []int64
	ages     []int64
	scanLens []int64
	inserted []int64
}

// ycsbRecorder is the memory store with what the engine asks of it noted.
type ycsbRecorder struct {
	driver.Driver
	scan   driver.Scanner
	prefix string
	size   func() int64 // the engine's keyspace when the operation is asked

	mu     sync.Mutex
	reads  []int64 // keys of Read, and the keyspace size then
	rsizes []int64
	writes []int64
	starts []int64 // scans' start keys and lengths
	lens   []int64
}

func (s *ycsbRecorder) index(key string) int64 {
	i, err := strconv.ParseInt(strings.TrimPrefix(key, s.prefix), 10, 64)
	if err != nil {
		panic("ycsbRecorder: key " + key + " is not of prefix " + s.prefix)
	}
	return i
}

func (s *ycsbRecorder) Read(ctx context.Context, key string) ([]byte, error) {
	i, size := s.index(key), s.size()
	s.mu.Lock()
	s.reads, s.rsizes = append(s.reads, i), append(s.rsizes, size)
	s.mu.Unlock()
	return s.Driver.Read(ctx, key)
}

func (s *ycsbRecorder) Write(ctx context.Context, key string, value []byte) error {
	i := s.index(key)
	s.mu.Lock()
	s.writes = append(s.writes, i)
	s.mu.Unlock()
	return s.Driver.Write(ctx, key, value)
}

func (s *ycsbRecorder) Scan(ctx context.Context, start string, n int) (int, error) {
	i := s.index(start)
	s.mu.Lock()
	s.starts, s.lens = append(s.starts, i), append(s.lens, int64(n))
	s.mu.Unlock()
	return s.scan.Scan(ctx, start, n)
}

// presetWorkload is the workload of the built-in preset name over the defaults, as
// `ndbench run --workload name` builds it, with a fixed seed.
func presetWorkload(t *testing.T, name string) config.Workload {
	t.Helper()
	p, ok := presets.Lookup(name)
	if !ok {
		t.Fatalf("no preset %s", name)
	}
	l, err := p.Layer()
	if err != nil {
		t.Fatal(err)
	}
	def := config.DefaultsLayer()
	def.Values["driver.name"] = "memory"
	snap, err := config.Build([]config.Layer{def, l})
	if err != nil {
		t.Fatalf("preset %s: %v", name, err)
	}
	w := snap.Config.Workload
	w.Seed = 38
	return w
}

// ndbenchYCSB runs preset name on the memory store for ycsbCrossRun of simulated time
// and returns what the store was asked, by YCSB's kinds of operation.
func ndbenchYCSB(t *testing.T, name string) (ycsbSample, config.Workload) {
	w := presetWorkload(t, name)
	mem := openMemory(t, nil)
	rec := &ycsbRecorder{Driver: mem, scan: mem.(driver.Scanner), prefix: w.KeyPrefix}
	clk := clock.NewSim(simStart)
	e := newSimEngine(t, clk, rec, w)
	rec.size = e.KeyspaceSize
	e.Collector().ResetAt(simStart)
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	e.to(ycsbCrossRun - time.Millisecond)
	if err := e.Stop(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	cum := e.tick()

	// The classes' operations by YCSB's names: each preset class runs one operation.
	s := ycsbSample{ops: map[string]int64{}}
	for _, cs := range w.Classes() {
		if !cs.Enabled || len(cs.Mix) == 0 {
			continue
		}
		if len(cs.Mix) != 1 {
			t.Fatalf("class %s runs %d operations; the test maps one per class", cs.Name, len(cs.Mix))
		}
		kind := cs.Mix[0].Op
		if kind == "write" {
			kind = "update"
		}
		s.ops[kind] += cum.Ops[cs.Name].Count
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	switch {
	case s.ops["rmw"] > 0:
		// An rmw reads and writes one key: its write's key is its key, once (the plain
		// reads beside it draw from the same distribution, but an rmw's read would
		// count its key twice).
		s.keys = rec.writes
	case s.ops["scan"] > 0:
		s.keys, s.scanLens = rec.starts, rec.lens
		s.inserted = rec.writes
	case s.ops["insert"] > 0:
		s.keys, s.inserted = rec.reads, rec.writes
		for i, k := range rec.reads {
			s.ages = append(s.ages, rec.rsizes[i]-1-k)
		}
	default:
		s.keys = append(slices.Clone(rec.reads), rec.writes...)
	}
	return s, w
}

// javaFNVHash64 is YCSB's Utils.fnvhash64 (FNV-1a over the value's bytes, least
// significant first, then Math.abs); go-ycsb's hashes the bytes the other way round.
func javaFNVHash64(v int64) int64 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(v))
	h := fnv.New64a()
	h.Write(b[:])
	x := int64(h.Sum64())
	if x < 0 {
		x = -x
	}
	return x
}

// emulateYCSB is YCSB's transaction phase of file f over records records for ops
// operations, from go-ycsb's generators composed as CoreWorkload (Java) composes them.
func emulateYCSB(f ycsbFile, records, ops int64) ycsbSample {
	r := mrand.New(mrand.NewSource(7))
	props := map[string]float64{"read": f.read, "update": f.update, "insert": f.insert, "scan": f.scan, "rmw": f.rmw}
	chooser := ycsbgen.NewDiscrete()
	for i, k := range ycsbKinds {
		if props[k] > 0 {
			chooser.Add(props[k], int64(i))
		}
	}
	inserts := ycsbgen.NewAcknowledgedCounter(records)
	var next func() int64
	switch f.distribution {
	case "zipfian":
		// ScrambledZipfianGenerator(0, recordcount + expectednewkeys): a zipfian over
		// [0, 10^10] with YCSB's hard-coded zeta, FNV-hashed modulo its items; nextKeynum
		// draws again a key beyond the last insert.
		expected := int64(float64(1000) * f.insert * 2) // operationcount 1000
		items := records + expected + 1
		z := ycsbgen.NewZipfian(0, 10_000_000_000, 0.99, 26.46902820178302)
		next = func() int64 {
			for {
				if k := javaFNVHash64(z.Next(r)) % items; k <= inserts.Last() {
					return k
				}
			}
		}
	case "latest":
		l := ycsbgen.NewSkewedLatest(inserts)
		next = func() int64 { return l.Next(r) }
	}
	scanLen := ycsbgen.NewUniform(1, 100)
	s := ycsbSample{ops: map[string]int64{}}
	for range ops {
		kind := ycsbKinds[chooser.Next(r)]
		s.ops[kind]++
		if kind == "insert" {
			k := inserts.Next(r)
			inserts.Acknowledge(k)
			s.inserted = append(s.inserted, k)
			continue
		}
		k := next()
		s.keys = append(s.keys, k)
		s.ages = append(s.ages, inserts.Last()-k)
		if kind == "scan" {
			s.scanLens = append(s.scanLens, scanLen.Next(r))
		}
	}
	return s
}

// histogram counts values in [0, n).
func histogram(values []int64, n int64) []int64 {
	c := make([]int64, n)
	for _, v := range values {
		c[v]++
	}
	return c
}

// chiSquare2 is the two-sample chi-square statistic over the bins of ca and cb (counts
// per value, in the same order), consecutive values merged until a bin holds ycsbMinBin
// draws of the two together, and its degrees of freedom. The samples may differ in size:
// each bin adds (k1·a - k2·b)² / (a + b) with k1 = sqrt(B/A), k2 = sqrt(A/B).
func chiSquare2(ca, cb []int64) (stat float64, df int) {
	var na, nb int64
	for i := range ca {
		na, nb = na+ca[i], nb+cb[i]
	}
	k1, k2 := math.Sqrt(float64(nb)/float64(na)), math.Sqrt(float64(na)/float64(nb))
	var a, b int64
	bins := 0
	for i := range ca {
		a, b = a+ca[i], b+cb[i]
		if a+b >= ycsbMinBin || i == len(ca)-1 {
			if a+b > 0 {
				d := k1*float64(a) - k2*float64(b)
				stat += d * d / float64(a+b)
				bins++
			}
			a, b = 0, 0
		}
	}
	return stat, bins - 1
}

// chiSquareCritical is the 1-alpha quantile of the chi-square distribution with df
// degrees of freedom (Wilson-Hilferty; within a percent at df >= 10 for these levels,
// and conservative below).
func chiSquareCritical(df int, alpha float64) float64 {
	z := math.Sqrt2 * math.Erfinv(1-2*alpha)
	k := float64(df)
	c := 1 - 2/(9*k) + z*math.Sqrt(2/(9*k))
	return k * c * c * c
}

// TestYCSBPresetsMatchGoYCSB: each YCSB preset, run by the engine on the memory store,
// asks the store for the operation mix, the keys and (E) the scan lengths of a YCSB run
// of the same workload, within a chi-square test's bounds (see the top of this file);
// the inserts of D and E take the keys numKeys, numKeys+1, ... each once. The
// comparisons are also made of the emulation against a control that differs as little
// as a real mistake would (E's scans 1..99 long, ages of a latest over a keyspace that
// does not grow), which the test must tell apart, so a pass means it could have failed.
func TestYCSBPresetsMatchGoYCSB(t *testing.T) {
	alpha := ycsbCrossAlpha / ycsbCrossTests
	compare := func(t *testing.T, what string, a, b []int64, differ bool) {
		t.Helper()
		stat, df := chiSquare2(a, b)
		if df < 1 {
			t.Fatalf("%s: %d bins, nothing to compare", what, df+1)
		}
		crit := chiSquareCritical(df, alpha)
		t.Logf("%s: chi-square %.1f, %d degrees of freedom, critical %.1f at %.1g", what, stat, df, crit, alpha)
		if differ && stat <= crit {
			t.Errorf("%s: control passed (chi-square %.1f <= %.1f): the test cannot see a difference of that size", what, stat, crit)
		}
		if !differ && stat > crit {
			t.Errorf("%s differs from YCSB's: chi-square %.1f > %.1f (%d degrees of freedom, alpha %.1g)", what, stat, crit, df, alpha)
		}
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for n := range ycsbFiles {
			if !yield(n) {
				return
			}
		}
	}) {
		t.Run(name, func(t *testing.T) {
			f := ycsbFiles[name]
			nd, w := ndbenchYCSB(t, name)
			var total int64
			for _, n := range nd.ops {
				total += n
			}
			y := emulateYCSB(f, w.NumKeys, total)
			t.Logf("ndbench %v, YCSB %v", nd.ops, y.ops)
			if len(y.ops) > 1 {
				var a, b []int64
				for _, k := range ycsbKinds {
					a, b = append(a, nd.ops[k]), append(b, y.ops[k])
				}
				compare(t, "operation mix", a, b, false)
			}
			for k := range nd.ops {
				if y.ops[k] == 0 {
					t.Errorf("ndbench ran %s, which YCSB's %s does not", k, name)
				}
			}
			if f.distribution == "latest" {
				top := slices.Max(append(slices.Clone(nd.ages), y.ages...)) + 1
				compare(t, "key ages (newest key - key)", histogram(nd.ages, top), histogram(y.ages, top), false)
				// The control: YCSB's latest over a keyspace that inserts do not grow.
				fixed := emulateYCSB(ycsbFile{read: 1, distribution: "latest"}, w.NumKeys, int64(len(y.ages)))
				compare(t, "control: key ages without inserts", histogram(fixed.ages, top), histogram(y.ages, top), true)
			} else {
				top := slices.Max(append(slices.Clone(nd.keys), y.keys...)) + 1
				compare(t, "keys", histogram(nd.keys, top), histogram(y.keys, top), false)
			}
			if f.scan > 0 {
				compare(t, "scan lengths", histogram(nd.scanLens, 101), histogram(y.scanLens, 101), false)
				short := slices.Clone(y.scanLens)
				rs := mrand.New(mrand.NewSource(9))
				for i := range short {
					short[i] = 1 + rs.Int63n(99)
				}
				compare(t, "control: scans of 1..99", histogram(short, 101), histogram(y.scanLens, 101), true)
			}
			if f.insert > 0 {
				got := slices.Sorted(slices.Values(nd.inserted))
				for i, k := range got {
					if k != w.NumKeys+int64(i) {
						t.Fatalf("inserted keys %v...: want %d, %d, ... each once", got[:min(len(got), 10)], w.NumKeys, w.NumKeys+1)
					}
				}
				if int64(len(got)) != nd.ops["insert"] {
					t.Errorf("%d keys inserted, %d inserts", len(got), nd.ops["insert"])
				}
			}
		})
	}
}
