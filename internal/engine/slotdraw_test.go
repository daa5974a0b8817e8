package engine

import (
	"context"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/engine/simstore"
	"github.com/ndbench/ndbench/internal/workload"
)

// slotKeyLog is a simulated store that notes the key of every read by the simulated instant
// it was sent.
type slotKeyLog struct {
	*simstore.Store
	clk  *clock.Sim
	mu   sync.Mutex
	keys map[time.Duration][]string
}

func (l *slotKeyLog) Read(ctx context.Context, key string) ([]byte, error) {
	l.mu.Lock()
	at := clock.Since(l.clk, simStart)
	l.keys[at] = append(l.keys[at], key)
	l.mu.Unlock()
	return l.Store.Read(ctx, key)
}

// TestPacedKeysFollowTheirSlots: on a schedule, what an operation draws follows its slot,
// not the worker that claimed it, so a run on simulated time with a fixed seed sends the
// same key at each instant whatever the pool's size and whichever worker the Go scheduler
// let claim each slot (each worker drew from its own stream before: issue 39's frozen
// backend test peaked differently from run to run). The keys keep their pattern's
// distribution: a uniform keyspace's counts pass a χ² test, and a zipfian one's hottest
// keys get the share one unbroken stream of the same pattern gives them.
func TestPacedKeysFollowTheirSlots(t *testing.T) {
	run := func(pattern string, readers int) (map[time.Duration][]string, workload.Keys) {
		clk := clock.NewSim(simStart)
		log := &slotKeyLog{Store: simstore.New(clk, time.Millisecond), clk: clk, keys: map[time.Duration][]string{}}
		e := newSimEngine(t, clk, log, testWorkload(t, func(w *config.Workload) {
			w.WriteEnabled = false
			w.ReadRate, w.Readers, w.MaxReaders = 1000, readers, readers
			w.NumKeys, w.Pattern, w.Seed = 100, pattern, 39
		}))
		if err := e.Start("read"); err != nil {
			t.Fatal(err)
		}
		e.to(10 * time.Second)
		if err := e.Stop(); err != nil {
			t.Fatal(err)
		}
		return log.keys, e.gen.Load().keys
	}
	for _, pattern := range []string{"uniform", "zipfian"} {
		t.Run(pattern, func(t *testing.T) {
			few, keys := run(pattern, 3)
			many, _ := run(pattern, 7)
			if len(few) < 9000 {
				t.Fatalf("%d instants with reads in 10 s at 1,000/s, want about 10,000", len(few))
			}
			differ := 0
			for at, ks := range few {
				if !slices.Equal(ks, many[at]) {
					if differ++; differ <= 3 {
						t.Errorf("at %v 3 readers read %v, 7 readers %v: want the same keys at the same instants", at, ks, many[at])
					}
				}
			}
			if differ > 0 || len(few) != len(many) {
				t.Errorf("%d of %d instants read other keys with 7 readers than with 3 (%d instants with reads)", differ, len(few), len(many))
			}
			counts := map[string]int{}
			n := 0
			for _, ks := range few {
				for _, k := range ks {
					counts[k]++
					n++
				}
			}
			if pattern == "uniform" {
				// 100 keys, 99 degrees of freedom: χ² ≤ 150 holds with p ≈ 0.0006.
				chi := 0.0
				want := float64(n) / 100
				for i := range 100 {
					d := float64(counts[fmt.Sprintf("T%d", i)]) - want
					chi += d * d / want
				}
				if chi > 150 {
					t.Errorf("uniform keys: χ² %.0f over 100 keys (99 degrees of freedom), want ≤ 150", chi)
				}
				return
			}
			// The hottest tenth of the keys, against one stream of the same pattern.
			r := rand.New(rand.NewPCG(1, 2))
			ref := map[string]int{}
			for range n {
				ref[fmt.Sprintf("T%d", keys.Next(r, workload.OpRead))]++
			}
			got, want := topShare(counts, 10, n), topShare(ref, 10, n)
			if math.Abs(got-want) > 0.02 {
				t.Errorf("zipfian keys: the hottest 10 of 100 keys got %.3f of the reads, one stream gives them %.3f", got, want)
			}
		})
	}
}

// topShare is the share of n the k most counted keys got.
func topShare(counts map[string]int, k, n int) float64 {
	cs := slices.Sorted(maps.Values(counts))
	s := 0
	for _, c := range cs[max(len(cs)-k, 0):] {
		s += c
	}
	return float64(s) / float64(n)
}
