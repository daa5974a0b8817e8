package engine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/stats"
)

// insertLog is the memory store with every key written counted, and writes slowed so that
// reads of the latest keys often find a key an insert claimed but has not written yet.
type insertLog struct {
	driver.Driver
	writeFor time.Duration
	mu       sync.Mutex
	writes   map[string]int
}

func (k *insertLog) Write(ctx context.Context, key string, value []byte) error {
	k.mu.Lock()
	k.writes[key]++
	k.mu.Unlock()
	time.Sleep(k.writeFor)
	return k.Driver.Write(ctx, key, value)
}

// keyIndex returns the index of a key of the test workload's prefix.
func keyIndex(t *testing.T, prefix, key string) int64 {
	t.Helper()
	i, err := strconv.ParseInt(strings.TrimPrefix(key, prefix), 10, 64)
	if err != nil {
		t.Fatalf("key %q: not of prefix %q", key, prefix)
	}
	return i
}

// TestInsertGrowsTheKeyspace: the built-in insert writes keys beyond the keyspace, each
// claimed once by one worker of any class (two insert classes here), so the keyspace
// grows by exactly the inserts made; latest reads follow the new keys, find them and
// validate their values, and a read of a key claimed but not written yet is a miss, never
// lost. Plain and pipelining workers alike.
func TestInsertGrowsTheKeyspace(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pipeline bool
		numKeys  int64
	}{
		{"plain", false, 100},
		{"pipelined", true, 100},
		{"plain, keyspace of one", false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := &insertLog{Driver: openMemory(t, nil), writeFor: time.Millisecond, writes: map[string]int{}}
			var d driver.Driver = log
			if tc.pipeline {
				d = &pipeStore{Driver: log}
			}
			w := testWorkload(t, func(w *config.Workload) {
				w.NumKeys = tc.numKeys
				w.Pattern = "latest"
				w.ValidateValues = true
				w.WriteMix = "insert"
				w.Readers, w.Writers = 4, 3
				w.Ops = map[string]config.OpClass{"more": {Workers: 2, Enabled: true, Mix: "insert"}}
				if tc.pipeline {
					w.Pipeline = 4
				}
			})
			e := newEngine(t, d, w)
			if got := e.KeyspaceSize(); got != tc.numKeys {
				t.Fatalf("KeyspaceSize before any insert = %d, want numKeys %d", got, tc.numKeys)
			}
			if err := e.Start(); err != nil {
				t.Fatal(err)
			}
			until(t, e, "20 inserts and a read of an inserted key", func(s stats.Summary) bool {
				rd := s.Ops["read"]
				return s.Ops["write"].Count+s.Ops["more"].Count >= 20 && rd.Count > rd.Misses
			})
			_ = e.Stop()
			waitIdle(t, e)
			e.Collector().Tick(time.Now())
			cum := e.Collector().Cumulative()
			ins := cum.Ops["write"].Count + cum.Ops["more"].Count
			if ins < 20 || cum.Ops["write"].Errors+cum.Ops["more"].Errors != 0 {
				t.Fatalf("%d inserts, %d+%d failed (%v, %v); want many, none failed", ins, cum.Ops["write"].Errors, cum.Ops["more"].Errors, cum.Ops["write"].Failures, cum.Ops["more"].Failures)
			}
			if got := e.KeyspaceSize(); got != tc.numKeys+ins {
				t.Errorf("KeyspaceSize = %d after %d inserts, want %d", got, ins, tc.numKeys+ins)
			}
			log.mu.Lock()
			seen := map[int64]bool{}
			for k, n := range log.writes {
				i := keyIndex(t, w.KeyPrefix, k)
				if n != 1 || i < tc.numKeys {
					t.Errorf("key %s (index %d) written %d times; want each inserted key once, beyond %d", k, i, n, tc.numKeys)
				}
				seen[i] = true
			}
			log.mu.Unlock()
			for i := tc.numKeys; i < tc.numKeys+ins; i++ {
				if !seen[i] {
					t.Errorf("key index %d was claimed but never written: the keys claimed are not dense", i)
					break
				}
			}
			rd := cum.Ops["read"]
			if rd.Count-rd.Misses == 0 {
				t.Errorf("latest reads found none of %d inserted keys (%d reads, %d misses)", ins, rd.Count, rd.Misses)
			}
			for v, n := range rd.Validation {
				if n != 0 {
					t.Errorf("reads: validation %s = %d (of %d reads, %d misses), want none", v, n, rd.Count, rd.Misses)
				}
			}
		})
	}
}

// TestInsertedKeyLostIsCaught: validation knows inserted keys: a store that drops an
// acknowledged insert has the read of that key counted lost.
func TestInsertedKeyLostIsCaught(t *testing.T) {
	d := &dropper{Driver: openMemory(t, nil)}
	w := testWorkload(t, func(w *config.Workload) {
		w.NumKeys = 10
		w.Pattern = "latest"
		w.ValidateValues = true
		w.WriteMix = "insert"
	})
	e := newEngine(t, d, w)
	if err := e.Start(); err != nil {
		t.Fatal(err)
	}
	// Every third insert is dropped, and reads go to the latest keys: a lost read comes
	// soon; a store that lost nothing would leave this waiting a minute and fail.
	until(t, e, "a read of a dropped insert", func(s stats.Summary) bool { return s.Ops["read"].Validation["lost"] > 0 })
	_ = e.Stop()
	waitIdle(t, e)
	e.Collector().Tick(time.Now())
	rd := e.Collector().Cumulative().Ops["read"]
	if lost := rd.Validation["lost"]; lost == 0 {
		t.Errorf("every third insert acknowledged and dropped, yet no read was lost (%d reads, %d misses)", rd.Count, rd.Misses)
	}
}

// dropper acknowledges every third write without storing it.
type dropper struct {
	driver.Driver
	n atomic.Int64
}

func (d *dropper) Write(ctx context.Context, key string, value []byte) error {
	if d.n.Add(1)%3 == 0 {
		return nil
	}
	return d.Driver.Write(ctx, key, value)
}

// pipeKinds is a pipelining driver that also deletes and scans (the memory store's).
type pipeKinds struct{ *pipeStore }

func (p pipeKinds) Delete(ctx context.Context, key string) error {
	return p.pipeStore.Driver.(driver.Deleter).Delete(ctx, key)
}

func (p pipeKinds) Scan(ctx context.Context, start string, n int) (int, error) {
	return p.pipeStore.Driver.(driver.Scanner).Scan(ctx, start, n)
}

// TestBuiltinKindsOnPipelines: a pipelining driver runs every built-in kind: delete, rmw
// and scan through the driver's own methods between batches, insert as a pipelined write;
// each is counted under its class, none fails, and validation finds nothing wrong.
func TestBuiltinKindsOnPipelines(t *testing.T) {
	for _, mix := range []string{"delete", "rmw", "scan", "insert", "read:5,scan:3,rmw:1,insert:1,delete:1,write:1"} {
		t.Run(mix, func(t *testing.T) {
			ps := &pipeStore{Driver: openMemory(t, nil)}
			w := testWorkload(t, func(w *config.Workload) {
				w.NumKeys = 50
				w.ValidateValues = true
				w.Pipeline = 4
				w.Ops = map[string]config.OpClass{"kinds": {Workers: 2, Enabled: true, Mix: mix}}
			})
			e := newEngine(t, pipeKinds{ps}, w)
			if err := e.Start(); err != nil {
				t.Fatal(err)
			}
			until(t, e, "20 operations of the class", func(s stats.Summary) bool {
				return s.Ops["kinds"].Count+s.Ops["kinds"].Errors >= 20 && ps.batches.Load() > 0
			})
			_ = e.Stop()
			waitIdle(t, e)
			e.Collector().Tick(time.Now())
			cum := e.Collector().Cumulative()
			k := cum.Ops["kinds"]
			if k.Count < 20 || k.Errors != 0 {
				t.Fatalf("class kinds (%s): %d operations, %d errors; want many, none failed", mix, k.Count, k.Errors)
			}
			if ps.batches.Load() == 0 {
				t.Error("the reads and writes of the other classes sent no batch")
			}
			for _, c := range []string{"read", "kinds"} {
				for v, n := range cum.Ops[c].Validation {
					if n != 0 {
						t.Errorf("%s: validation %s = %d, want none", c, v, n)
					}
				}
			}
		})
	}
}

// strictInserts is the memory store with an insert that refuses a key that exists, as
// SQL's INSERT does, counting its calls.
type strictInserts struct {
	driver.Driver
	inserts atomic.Int64
	mu      sync.Mutex
}

func (s *strictInserts) Insert(ctx context.Context, key string, value []byte) error {
	s.inserts.Add(1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.Driver.Read(ctx, key); err == nil {
		return driver.Wrap(driver.ClassRejected, errors.New("duplicate key "+key))
	}
	return s.Driver.Write(ctx, key, value)
}

// pipeInserts is a pipelining driver whose store inserts apart from its writes.
type pipeInserts struct {
	*pipeStore
	ins *strictInserts
}

func (p pipeInserts) Insert(ctx context.Context, key string, value []byte) error {
	return p.ins.Insert(ctx, key, value)
}

// TestInsertUsesInserter: a driver with its own insert (driver.Inserter) gets every
// insert through it, on pipelining workers too (outside the batches), and since each key
// is claimed once none is refused as a duplicate.
func TestInsertUsesInserter(t *testing.T) {
	for _, pipelined := range []bool{false, true} {
		t.Run(fmt.Sprintf("pipelined=%v", pipelined), func(t *testing.T) {
			ins := &strictInserts{Driver: openMemory(t, nil)}
			var d driver.Driver = ins
			if pipelined {
				d = pipeInserts{pipeStore: &pipeStore{Driver: ins.Driver}, ins: ins}
			}
			w := testWorkload(t, func(w *config.Workload) {
				w.NumKeys = 10
				w.ValidateValues = true
				w.WriteMix = "insert"
				w.Writers = 4
				if pipelined {
					w.Pipeline = 4
				}
			})
			e := newEngine(t, d, w)
			if err := e.Start(); err != nil {
				t.Fatal(err)
			}
			until(t, e, "20 inserts", func(s stats.Summary) bool { return s.Ops["write"].Count+s.Ops["write"].Errors >= 20 })
			_ = e.Stop()
			waitIdle(t, e)
			e.Collector().Tick(time.Now())
			wr := e.Collector().Cumulative().Ops["write"]
			if wr.Count < 20 || wr.Errors != 0 {
				t.Fatalf("%d inserts, %d failed (%v); want many, no duplicate", wr.Count, wr.Errors, wr.Failures)
			}
			if got := ins.inserts.Load(); got != wr.Count {
				t.Errorf("the driver's Insert ran %d times for %d inserts", got, wr.Count)
			}
		})
	}
}

// TestInsertSharesSplitTheNewKeys: nodes inserting into one keyspace, each told its share
// (workload.insertMember of insertMembers), never insert the same key: together they
// insert exactly as many distinct keys as inserts, each once, member i's all at
// numKeys+i+k×n; and a node whose share changes mid-run (a fleet re-split) claims its new
// keys beyond every key it claimed before.
func TestInsertSharesSplitTheNewKeys(t *testing.T) {
	const numKeys = 50
	for _, tc := range []struct {
		name    string
		members int
		resplit int // a second share for member 0 after the first run (0: none)
	}{
		{"one node", 1, 0},
		{"two nodes", 2, 0},
		{"three nodes", 3, 0},
		{"one node, then a third of three", 1, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := openMemory(t, nil)
			var engines []*Engine
			var logs []*insertLog
			for i := range tc.members {
				log := &insertLog{Driver: store, writes: map[string]int{}}
				logs = append(logs, log)
				engines = append(engines, newEngine(t, log, testWorkload(t, func(w *config.Workload) {
					w.NumKeys = numKeys
					w.ValidateValues = true
					w.ReadEnabled = false
					w.WriteMix = "insert"
					w.InsertMember, w.InsertMembers = i, tc.members
				})))
			}
			run := func() {
				before := make([]int64, len(engines))
				for i, e := range engines {
					e.Collector().Tick(time.Now())
					before[i] = e.Collector().Cumulative().Ops["write"].Count
				}
				for _, e := range engines {
					if err := e.Start(); err != nil {
						t.Fatal(err)
					}
				}
				// Each member inserts some keys in each run, however slowly a loaded
				// machine runs it.
				for i, e := range engines {
					before := before[i]
					until(t, e, "an insert", func(s stats.Summary) bool { return s.Ops["write"].Count > before })
				}
				for _, e := range engines {
					_ = e.Stop()
					waitIdle(t, e)
				}
			}
			run()
			if tc.resplit > 0 {
				w := testWorkload(t, func(w *config.Workload) {
					w.NumKeys = numKeys
					w.ValidateValues = true
					w.ReadEnabled = false
					w.WriteMix = "insert"
					w.InsertMember, w.InsertMembers = 2, tc.resplit
				})
				if err := engines[0].Apply(w); err != nil {
					t.Fatal(err)
				}
				run()
			}
			var ins int64
			for i, e := range engines {
				e.Collector().Tick(time.Now())
				wr := e.Collector().Cumulative().Ops["write"]
				if wr.Errors != 0 || wr.Count == 0 {
					t.Fatalf("member %d: %d inserts, %d failed; want some, none failed", i, wr.Count, wr.Errors)
				}
				ins += wr.Count
				if tc.resplit == 0 {
					if got, want := e.KeyspaceSize(), numKeys+wr.Count*int64(tc.members); got != want {
						t.Errorf("member %d: KeyspaceSize %d after %d inserts, want numKeys + %d×%d = %d", i, got, wr.Count, wr.Count, tc.members, want)
					}
				}
			}
			written := map[string]int{}
			for m, log := range logs {
				log.mu.Lock()
				for k, n := range log.writes {
					written[k] += n
					if i := keyIndex(t, "T", k); tc.resplit == 0 && (i < numKeys || (i-numKeys)%int64(tc.members) != int64(m)) {
						t.Errorf("member %d of %d inserted key index %d; want numKeys %d + %d + k×%d", m, tc.members, i, numKeys, m, tc.members)
					}
				}
				log.mu.Unlock()
			}
			for k, n := range written {
				if i := keyIndex(t, "T", k); n != 1 || i < numKeys {
					t.Errorf("key %s written %d times; want every inserted key once, beyond %d", k, n, numKeys)
				}
			}
			if int64(len(written)) != ins {
				t.Errorf("%d distinct keys inserted by %d inserts; want one new key per insert", len(written), ins)
			}
		})
	}
}

// TestResplitClaimsEachKeyOnce: members of a split that drifted apart (they inserted at
// different paces) are re-split with one base at or beyond every key claimed: each member
// of the old split first claims what is left of its stride below the base, then its new
// share, so no key is claimed twice, and every key below the highest one claimed is
// claimed below the base but the unclaimed rest of a member that left (above the base the
// members' shares stand where their paces took them). A node's own single share (a
// node that joins) has no keys below the base to finish. Each member's claims start once
// its re-split reached it, concurrently with the other members' re-splits and claims.
func TestResplitClaimsEachKeyOnce(t *testing.T) {
	const numKeys = 100
	tests := []struct {
		name string
		// before is each member's claims under the first split (-1: not in it); after
		// the re-split, the members are those with a share in after.
		before []int
		after  []int // member index in the new split, -1: left
		claims int   // per member after the re-split
		gap    int64 // the base's headroom beyond the highest key claimed
		holes  bool  // a member that left leaves keys unclaimed below the base
	}{
		{"two drifted apart, a third joins", []int{10, 3, -1}, []int{0, 1, 2}, 40, 0, false},
		{"two drifted apart, a third joins, headroom", []int{10, 3, -1}, []int{0, 1, 2}, 40, 17, false},
		{"three, the middle one leaves", []int{5, 9, 2}, []int{0, -1, 1}, 30, 4, true},
		{"one alone, then two", []int{7, -1}, []int{0, 1}, 20, 0, false},
		{"three become two, then a fourth share", []int{4, 4, 12}, []int{1, 0, -1}, 25, 9, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := int64(0)
			for _, b := range tc.before {
				if b >= 0 {
					n++
				}
			}
			m := int64(0)
			for _, a := range tc.after {
				if a >= 0 {
					m++
				}
			}
			ks := make([]*insertKeys, len(tc.before))
			claimed := map[int64]int{}
			var mu sync.Mutex
			take := func(i int, k int64) {
				mu.Lock()
				defer mu.Unlock()
				if o, dup := claimed[k]; dup {
					t.Errorf("key %d claimed by member %d and member %d", k, o, i)
				}
				claimed[k] = i
			}
			var idx int64
			var bound int64 = numKeys
			for i, b := range tc.before {
				ks[i] = &insertKeys{}
				if b < 0 {
					ks[i].plan(numKeys, 0, 0, 1) // a node alone
					continue
				}
				if n > 1 {
					ks[i].plan(numKeys, numKeys, idx, n)
				} else {
					ks[i].plan(numKeys, 0, 0, 1)
				}
				idx++
				for range b {
					take(i, ks[i].claim())
				}
				bound = max(bound, ks[i].size())
			}
			base := bound + tc.gap
			var wg sync.WaitGroup
			for i, a := range tc.after {
				if a < 0 {
					continue
				}
				// The re-split reaches this member before its claims (a claim made before it
				// reaches a node follows the old stride past the base: the base's headroom
				// is for those); the other members' re-splits and claims run beside them.
				ks[i].plan(numKeys, base, int64(a), m)
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range tc.claims {
						take(i, ks[i].claim())
					}
				}()
			}
			wg.Wait()
			var inserted int64
			for i := range ks {
				inserted += ks[i].inserted()
			}
			if int64(len(claimed)) != inserted {
				t.Errorf("%d keys claimed, the members count %d inserts", len(claimed), inserted)
			}
			top := int64(numKeys)
			for k := range claimed {
				top = max(top, k+1)
			}
			missing := 0
			for k := int64(numKeys); k < base; k++ {
				if _, ok := claimed[k]; !ok {
					missing++
				}
			}
			if (missing > 0) != tc.holes {
				t.Errorf("%d keys below the base %d not claimed; want holes: %v", missing, base, tc.holes)
			}
			t.Logf("%d keys claimed, up to %d; base %d; %d unclaimed below", len(claimed), top-1, base, missing)
		})
	}
}
