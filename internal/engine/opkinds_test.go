package engine

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/stats"
)

// TestDeleteBesideValidatedReads: a class that deletes keys beside validated reads and
// writes of the same small keyspace (so deletes, writes and reads of one key overlap all
// the time) counts its deletes, makes reads miss, and never has a miss called lost: the
// tracker knows a deleted key is expected absent, also while the delete is in flight.
func TestDeleteBesideValidatedReads(t *testing.T) {
	w := testWorkload(t, func(w *config.Workload) {
		w.NumKeys = 20
		w.ValidateValues = true
		w.Readers, w.Writers = 2, 2
		w.Ops = map[string]config.OpClass{"purge": {Workers: 2, Enabled: true, Mix: "delete"}}
	})
	e := newEngine(t, openMemory(t, nil), w)
	// Every key is written first, so a read that misses found a deleted key, not one never
	// written (without this, reads missed with deletes that deleted nothing).
	if st, err := e.Backfill(context.Background(), BackfillOptions{Workers: 2}); err != nil || st.Written != w.NumKeys {
		t.Fatalf("backfill: %+v, %v", st, err)
	}
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	// A read that missed is waited for, not expected by the 100th delete: at load 25 the
	// readers, starved beside 2 deleters and 2 writers, missed no key in the 0.08 s of
	// 212 deletes. Deletes that never make a read miss still fail here, after a minute.
	until(t, e, "100 deletes and a read that missed", func(s stats.Summary) bool {
		return s.Ops["purge"].Count+s.Ops["purge"].Errors >= 100 && s.Ops["read"].Misses > 0
	})
	_ = e.Stop()
	waitIdle(t, e)
	e.Collector().Tick(time.Now())
	cum := e.Collector().Cumulative()
	rd, del := cum.Ops["read"], cum.Ops["purge"]
	if del.Count < 100 || del.Errors != 0 {
		t.Fatalf("purge: %d deletes, %d errors; want many, none failed", del.Count, del.Errors)
	}
	for v, n := range rd.Validation {
		if n != 0 {
			t.Errorf("reads: validation %s = %d (of %d reads, %d misses), want none", v, n, rd.Count, rd.Misses)
		}
	}
}

// slowRMW is the memory store with reads and writes that take a known time, so the
// parts of an rmw have durations a test can check.
type slowRMW struct {
	driver.Driver
	readFor, writeFor time.Duration
	reads, writes     atomic.Int64
}

func (s *slowRMW) Read(ctx context.Context, key string) ([]byte, error) {
	s.reads.Add(1)
	time.Sleep(s.readFor)
	return s.Driver.Read(ctx, key)
}

func (s *slowRMW) Write(ctx context.Context, key string, value []byte) error {
	s.writes.Add(1)
	time.Sleep(s.writeFor)
	return s.Driver.Write(ctx, key, value)
}

// TestRMWTimedAsOneAndAsItsParts: the built-in rmw reads a key and writes it, every
// driver has it, and it is recorded as one operation of its class (spanning both calls)
// and as its two parts, "<class>.rmw.read" and "<class>.rmw.write", each with its own
// service time; with validation, the read part judges what it read and the write part's
// values are what later reads find.
func TestRMWTimedAsOneAndAsItsParts(t *testing.T) {
	d := &slowRMW{Driver: openMemory(t, nil), readFor: 2 * time.Millisecond, writeFor: 6 * time.Millisecond}
	w := testWorkload(t, func(w *config.Workload) {
		// 5 keys, not 50: 20 rmw on 50 uniform keys all differ about once in 83 runs (no
		// read could find a written key; CI 53c met it). On 5, some key gets 4 of them,
		// and with 2 writers the third of those starts after one of the first two ended.
		w.NumKeys = 5
		w.ValidateValues = true
		w.ReadEnabled = false
		w.WriteMix = "rmw"
		w.Writers = 2
	})
	e := newEngine(t, d, w)
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	until(t, e, "20 rmw", func(s stats.Summary) bool { return s.Ops["write"].Count+s.Ops["write"].Errors >= 20 })
	_ = e.Stop()
	waitIdle(t, e)
	e.Collector().Tick(time.Now())
	cum := e.Collector().Cumulative()
	whole, rp, wp := cum.Ops["write"], cum.Ops["write.rmw.read"], cum.Ops["write.rmw.write"]
	if whole.Count < 20 || whole.Errors != 0 {
		t.Fatalf("rmw: %d operations, %d errors", whole.Count, whole.Errors)
	}
	if rp.Count != whole.Count || wp.Count != whole.Count {
		t.Errorf("%d rmw, %d read parts, %d write parts: want one of each per rmw", whole.Count, rp.Count, wp.Count)
	}
	if r, w := d.reads.Load(), d.writes.Load(); r != w || r < whole.Count {
		t.Errorf("the store saw %d reads and %d writes for %d rmw", r, w, whole.Count)
	}
	// Service times: each part at least its sleep, the whole at least both (µs).
	if rp.ServiceTime.P50 < 2000 || wp.ServiceTime.P50 < 6000 || whole.ServiceTime.P50 < 8000 {
		t.Errorf("service p50: read part %.0fµs, write part %.0fµs, whole %.0fµs; want ≥ 2000, 6000, 8000",
			rp.ServiceTime.P50, wp.ServiceTime.P50, whole.ServiceTime.P50)
	}
	if wp.ServiceTime.P50 >= whole.ServiceTime.P50 {
		t.Errorf("write part p50 %.0fµs not below the whole's %.0fµs", wp.ServiceTime.P50, whole.ServiceTime.P50)
	}
	// Keys are read back after their rmw wrote them: found, never invalid.
	if rp.Count-rp.Misses == 0 {
		t.Error("no rmw read found a key an rmw had written")
	}
	for v, n := range rp.Validation {
		if n != 0 {
			t.Errorf("rmw reads: validation %s = %d, want none", v, n)
		}
	}
}

// TestBuiltinOperationsNeedWhatTheyUse: delete needs a driver that deletes; the error
// names the mix and what is allowed. (A pipelining driver runs every built-in kind:
// TestBuiltinKindsOnPipelines.)
func TestBuiltinOperationsNeedWhatTheyUse(t *testing.T) {
	w := testWorkload(t, func(w *config.Workload) { w.WriteMix = "delete" })
	_, err := New(nopStore{}, w, Options{})
	if fes, ok := driver.AsFieldErrors(err); !ok || fes[0].Field != "workload.writeMix" || fes[0].Allowed != "operations of the connected driver: read, write, rmw, insert" {
		t.Errorf("delete on a driver without Deleter: %v", err)
	}
}

// scanCounter is the memory store with its scans' lengths counted.
type scanCounter struct {
	driver.Driver
	lengths [scanLengthMax + 1]atomic.Int64 // by n asked
	found   atomic.Int64                    // keys the scans read
}

func (s *scanCounter) Scan(ctx context.Context, start string, n int) (int, error) {
	if n >= 1 && n <= scanLengthMax {
		s.lengths[n].Add(1)
	}
	got, err := s.Driver.(driver.Scanner).Scan(ctx, start, n)
	s.found.Add(int64(got))
	return got, err
}

// TestScanLengths: the built-in scan of a driver that implements driver.Scanner starts at
// a key of the pattern and asks for a length uniform in 1..100 (YCSB E's defaults), and
// after a backfill every scan reads keys, so none is a miss.
func TestScanLengths(t *testing.T) {
	d := &scanCounter{Driver: openMemory(t, nil)}
	w := testWorkload(t, func(w *config.Workload) {
		w.NumKeys = 200
		w.ReadMix = "scan"
		w.WriteEnabled = false
		w.ReadRate = 2000
	})
	// On a simulated clock: a second at 2,000/s is exactly the 2,001 scans due (0 to 1 s),
	// whatever the machine's speed.
	clk := clock.NewSim(simStart)
	e := newSimEngine(t, clk, d, w)
	if _, err := e.Backfill(context.Background(), BackfillOptions{Workers: 2}); err != nil {
		t.Fatal(err)
	}
	e.Collector().ResetAt(simStart)
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	e.to(time.Second)
	s := e.tick().Ops["read"]
	_ = e.Stop()
	waitIdle(t, e.Engine)
	var scans, sum int64
	lo, hi := 0, 0
	for n := 1; n <= scanLengthMax; n++ {
		c := d.lengths[n].Load()
		scans += c
		sum += int64(n) * c
		if c > 0 && lo == 0 {
			lo = n
		}
		if c > 0 {
			hi = n
		}
	}
	// The figures are the 2,001 due by 1 s; the driver's count is taken after the stop,
	// which workers woken by it may still add to.
	if s.Count != 2001 || scans < s.Count || s.Misses != 0 || s.Errors != 0 {
		t.Fatalf("%d scans reached the driver; read class: %d ops (want the 2,001 due), %d misses, %d errors", scans, s.Count, s.Misses, s.Errors)
	}
	if lo != 1 || hi != scanLengthMax {
		t.Errorf("scan lengths from %d to %d, want 1 to %d", lo, hi, scanLengthMax)
	}
	// Uniform on 1..100: mean 50.5, standard error of the mean ~29/sqrt(2001) = 0.65.
	if mean := float64(sum) / float64(scans); mean < 47 || mean > 54 {
		t.Errorf("mean scan length %.1f over %d scans, want ~50.5", mean, scans)
	}
	if d.found.Load() < scans {
		t.Errorf("scans read %d keys in all, fewer than one per scan", d.found.Load())
	}
}
