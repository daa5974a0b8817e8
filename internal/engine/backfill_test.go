package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ndbench/ndbench/internal/clock"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/engine/simstore"
)

// simBulk is a store on simulated time whose bulk write takes one service time for the
// whole batch, as one round trip does.
type simBulk struct {
	*simstore.Store
	clk     *clock.Sim
	service time.Duration
}

func (s simBulk) WriteBulk(ctx context.Context, keys []string, values [][]byte) error {
	if err := clock.Sleep(ctx, s.clk, s.service); err != nil {
		return err
	}
	for i := range keys {
		if err := s.Store.Write(ctx, keys[i], values[i]); err != nil {
			return err
		}
	}
	return nil
}

// TestPacedBackfillTimesTheStore: a paced bulk backfill's response time is the store's
// time for the batch, not the wait while its keys fell due one by one. A batch is due when
// its last key is (it cannot be sent before); timing each key from its own slot counted
// up to batch/rate of waiting in the generator as the store's latency (about 70 ms at
// 1,000 keys/s, issue 36). On simulated time against a store that keeps up, every key's
// response time is the bulk write's service time, and no key starts late.
func TestPacedBackfillTimesTheStore(t *testing.T) {
	for _, tc := range []struct {
		rate    float64
		workers int
		batch   int
		service time.Duration
	}{
		{rate: 1000, workers: 1, batch: 0, service: 2 * time.Millisecond}, // the default batch, 100
		{rate: 1000, workers: 4, batch: 0, service: 2 * time.Millisecond},
		{rate: 200, workers: 2, batch: 10, service: 5 * time.Millisecond},
		{rate: 5000, workers: 2, batch: 50, service: time.Millisecond},
	} {
		t.Run(fmt.Sprintf("rate=%v,workers=%d,batch=%d,service=%v", tc.rate, tc.workers, tc.batch, tc.service), func(t *testing.T) {
			clk := clock.NewSim(simStart)
			store := simBulk{Store: simstore.New(clk, 0), clk: clk, service: tc.service}
			e := newSimEngine(t, clk, store, testWorkload(t, func(w *config.Workload) { w.NumKeys = 1_000_000 }))
			e.Collector().ResetAt(simStart)
			if err := e.StartBackfill(BackfillOptions{Workers: tc.workers, Rate: tc.rate, Batch: tc.batch}); err != nil {
				t.Fatal(err)
			}
			e.parked = tc.workers - 1
			e.to(2 * time.Second)
			o := e.tick().Ops["backfill"]
			e.StopBackfill()
			// What was in flight at the stop (a bulk write, a backoff) ends on the clock.
			for i := 0; ; i++ {
				clk.Advance(10 * time.Millisecond)
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				err := e.Wait(ctx)
				cancel()
				if err == nil {
					break
				}
				if i == 100 {
					t.Fatalf("the backfill's workers did not exit: %v", err)
				}
			}
			if o.Count < int64(tc.rate) {
				t.Fatalf("%d keys written in 2 s at %v/s: the backfill did not run", o.Count, tc.rate)
			}
			svc := float64(tc.service.Microseconds())
			// 3 significant digits: a service time of 2 ms reads as up to 2.002 ms.
			if o.ServiceTime.Max > svc*1.002 || o.ServiceTime.P50 < svc*0.998 {
				t.Errorf("service time p50 %.0f µs max %.0f µs, want the store's %.0f µs", o.ServiceTime.P50, o.ServiceTime.Max, svc)
			}
			if o.ResponseTime.Max > svc*1.002 {
				t.Errorf("response time p50 %.0f µs max %.0f µs over %d keys, want the store's %.0f µs: the wait for the batch to fill is counted",
					o.ResponseTime.P50, o.ResponseTime.Max, o.Count, svc)
			}
			if o.StartLag.Max != 0 {
				t.Errorf("start lag max %.0f µs, want 0: each batch was sent when its last key fell due", o.StartLag.Max)
			}
		})
	}
}
