//go:build integration

package engine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/engine"
	"github.com/ndbench/ndbench/internal/stats"
	"github.com/ndbench/ndbench/internal/testserver"
)

// startPostgresEngine starts PostgreSQL, opens the postgres driver in mode=direct and an
// engine with w, backfilled (extra adds driver options); everything is closed when the test ends.
func startPostgresEngine(t *testing.T, ctx context.Context, w config.Workload, extra map[string]string) (*testserver.Server, *engine.Engine, *stats.Collector) {
	t.Helper()
	srv, err := testserver.Postgres(ctx)
	if err != nil {
		t.Fatalf("start postgres: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("postgres log tail:\n%s", srv.LogTail())
		}
		_ = srv.Stop()
	})
	opts := map[string]string{"dsn": srv.DSN(), "mode": "direct", "connectTimeout": "1s"}
	for k, v := range extra {
		opts[k] = v
	}
	d, _, err := driver.Open(ctx, "postgres", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	// The node opens the workers' connections at Init (driver.Warmer), and so does this
	// harness: the tests' first windows measure operations, not connects. Without it,
	// each worker's first operation waited for its connect, and with a 300 ms op timeout
	// on a busy machine all six of TestPostgresDirectDeadlines' workers timed out in the
	// window before the stall (CI 55, one core kept busy).
	wm, ok := d.(driver.Warmer)
	if !ok {
		t.Fatal("postgres in mode=direct is no driver.Warmer")
	}
	if err := wm.Warm(ctx, w.Readers+w.Writers); err != nil {
		t.Fatalf("warm: %v", err)
	}
	if pr, ok := d.(driver.Pipeliner); !ok || !pr.Pipelines() {
		t.Fatal("postgres in mode=direct gives no pipelines")
	}
	coll := stats.NewCollector(stats.Config{Shards: 4})
	e, err := engine.New(d, w, engine.Options{Collector: coll})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close(2 * time.Second) })
	if st, err := e.Backfill(ctx, engine.BackfillOptions{Workers: 4}); err != nil || st.Written != w.NumKeys {
		t.Fatalf("backfill: %+v, %v", st, err)
	}
	return srv, e, coll
}

// TestPostgresPipelinedValidated runs the engine closed loop with workload.pipeline=8 (so
// every batch is full) and validation on against PostgreSQL in mode=direct, with a Sync
// per operation and per batch: reads of keys the same batches write must come back intact
// and current, with no errors.
func TestPostgresPipelinedValidated(t *testing.T) {
	for _, sync := range []string{"op", "batch"} {
		t.Run("pipelineSync="+sync, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			w := config.DefaultWorkload()
			w.NumKeys, w.DataSize, w.ValidateValues, w.Pipeline = 500, 100, true, 8
			w.Readers, w.Writers, w.ReadRate, w.WriteRate = 4, 2, 0, 0
			w.OpTimeout = 5 * time.Second
			_, e, coll := startPostgresEngine(t, ctx, w, map[string]string{"pipelineSync": sync})
			if err := e.Start(); err != nil {
				t.Fatal(err)
			}
			s := window(coll, 3*time.Second)
			for _, op := range []string{"read", "write"} {
				o := s.Ops[op]
				if o.Count < 1000 {
					t.Errorf("%s: %d ops in 3 s; want a steady stream", op, o.Count)
				}
				if o.Errors != 0 {
					t.Errorf("%s: failures %v", op, o.Failures)
				}
				for v, n := range o.Validation {
					if n != 0 {
						t.Errorf("%s: %d %s values", op, n, v)
					}
				}
			}
			if s.Ops["read"].Misses != 0 {
				t.Errorf("%d misses of backfilled keys", s.Ops["read"].Misses)
			}
			t.Logf("pipeline=8: %d reads, %d writes in 3 s", s.Ops["read"].Count, s.Ops["write"].Count)
			if err := e.Stop(); err != nil {
				t.Fatal(err)
			}
			if err := e.Wait(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestPostgresDirectDeadlines stalls the server (every process SIGSTOPped) under batches
// of 1 and of 4: operations must end at their op timeout as timeouts, reached through
// Pipeline.Interrupt, with no other failure class; every worker stays; and the workers
// reconnect and run cleanly once the server resumes. Run it with -race: Interrupt comes
// from the engine's watchdog goroutine.
//
// The pools are fixed (maxReaders=readers, maxWriters=writers). With elastic pools the
// test measured the machine: 800 reads/s on 4 workers needs each read under 5 ms, which a
// loaded 2-core machine under -race does not give, so the pools grew during the startup
// connects (to 19-28 readers, then to the cap of 64) and, sharing poolSize connections,
// the grown pools kept timing out after the stall (no clean window within 10 s). That an
// elastic pool does not grow while its store answers nothing is
// TestElasticPoolDoesNotGrowInAStall's, on simulated time.
func TestPostgresDirectDeadlines(t *testing.T) {
	for _, depth := range []int{1, 4} {
		t.Run(fmt.Sprintf("pipeline=%d", depth), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			w := config.DefaultWorkload()
			w.NumKeys, w.DataSize, w.ValidateValues, w.Pipeline = 200, 100, true, depth
			w.Readers, w.Writers, w.ReadRate, w.WriteRate = 4, 2, 800, 200
			w.MaxReaders, w.MaxWriters = w.Readers, w.Writers
			w.OpTimeout = 300 * time.Millisecond
			srv, e, coll := startPostgresEngine(t, ctx, w, nil)
			if err := e.Start(); err != nil {
				t.Fatal(err)
			}
			if s := window(coll, time.Second); s.Ops["read"].Count == 0 || s.Ops["read"].Errors+s.Ops["write"].Errors != 0 {
				t.Fatalf("before the stall: reads %d, failures %v %v", s.Ops["read"].Count, s.Ops["read"].Failures, s.Ops["write"].Failures)
			}
			resume, err := srv.Pause()
			if err != nil {
				t.Fatal(err)
			}
			s := window(coll, 2*time.Second)
			resume()
			t.Logf("during a 2 s stall: read failures %v, write failures %v", s.Ops["read"].Failures, s.Ops["write"].Failures)
			for _, op := range []string{"read", "write"} {
				o := s.Ops[op]
				if o.Failures["timeout"] == 0 || o.Errors != o.Failures["timeout"] {
					t.Errorf("%s during the stall: failures %v; want timeouts only", op, o.Failures)
				}
				if want := map[string]int{"read": w.Readers, "write": w.Writers}[op]; o.Workers != want {
					t.Errorf("%s workers = %d during the stall, want %d", op, o.Workers, want)
				}
			}
			// Each stalled batch ends at its deadline: the timeouts come at about the
			// rate the workers can start batches, not one per stall.
			if n := s.Ops["read"].Failures["timeout"]; n < 4*int64(depth) {
				t.Errorf("%d read timeouts in a 2 s stall with a 300 ms op timeout; want several per worker", n)
			}
			waitFor(t, "clean throughput after the stall", 10*time.Second, func() bool {
				s := window(coll, 500*time.Millisecond)
				return s.Ops["read"].Count > 0 && s.Ops["write"].Count > 0 && s.Ops["read"].Errors+s.Ops["write"].Errors == 0 &&
					s.Ops["read"].Validation["corrupt"]+s.Ops["read"].Validation["wrongKey"] == 0
			})
			if err := e.Stop(); err != nil {
				t.Fatal(err)
			}
			if err := e.Wait(ctx); err != nil {
				t.Fatalf("workers stuck after stop: %v", err)
			}
		})
	}
}
