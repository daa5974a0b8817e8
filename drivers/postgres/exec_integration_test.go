//go:build integration

package postgres

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/driver/drivertest"
)

// TestSingleOperations runs mode=direct's batches of one, the default shape, in turn on
// one connection: a write, its read, a miss, a write the server rejects, and the
// operations after it. Each ends as a user reads it in the summary, and the rejected
// write leaves the connection in step with the server (the same connection, no
// reconnect), since the single operation is read up to its ReadyForQuery by the driver
// itself.
func TestSingleOperations(t *testing.T) {
	ctx := drivertest.Context(t)
	if _, err := rawConn(t).Exec(ctx, "CREATE TABLE IF NOT EXISTS single (key TEXT PRIMARY KEY, value BYTEA NOT NULL CHECK (length(value) < 8))"); err != nil {
		t.Fatal(err)
	}
	d := open(t, map[string]string{"table": "single", "createSchema": "false", "mode": "direct"})
	pl, err := d.NewPipeline(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()
	prefix := fmt.Sprintf("single-%d-", time.Now().UnixNano())
	steps := []struct {
		name    string
		op      driver.PipelineOp
		want    string
		wantErr func(error) bool
	}{
		{"write", driver.PipelineOp{Op: driver.PipelineWrite, Key: prefix + "a", Value: []byte("v1")}, "", nil},
		{"read it", driver.PipelineOp{Op: driver.PipelineRead, Key: prefix + "a"}, "v1", nil},
		{"upsert", driver.PipelineOp{Op: driver.PipelineWrite, Key: prefix + "a", Value: []byte("v2")}, "", nil},
		{"read the upsert", driver.PipelineOp{Op: driver.PipelineRead, Key: prefix + "a"}, "v2", nil},
		{"miss", driver.PipelineOp{Op: driver.PipelineRead, Key: prefix + "none"}, "",
			func(err error) bool { return errors.Is(err, driver.ErrNotFound) }},
		{"write the server rejects", driver.PipelineOp{Op: driver.PipelineWrite, Key: prefix + "b", Value: []byte("far too long")}, "",
			func(err error) bool { return driver.Classify(err) == driver.ClassRejected }},
		{"read after the rejection", driver.PipelineOp{Op: driver.PipelineRead, Key: prefix + "a"}, "v2", nil},
		{"write after the rejection", driver.PipelineOp{Op: driver.PipelineWrite, Key: prefix + "b", Value: []byte("short")}, "", nil},
		{"read it back", driver.PipelineOp{Op: driver.PipelineRead, Key: prefix + "b"}, "short", nil},
	}
	var conn uint32
	for _, s := range steps {
		calls := 0
		var got []byte
		var gotErr error
		pl.Run(ctx, []driver.PipelineOp{s.op}, func(i int, v []byte, err error) {
			calls++
			got, gotErr = append([]byte(nil), v...), err
		})
		if calls != 1 {
			t.Fatalf("%s: done called %d times, want once", s.name, calls)
		}
		switch {
		case s.wantErr != nil && !s.wantErr(gotErr):
			t.Errorf("%s: error %v, not the one expected", s.name, gotErr)
		case s.wantErr == nil && gotErr != nil:
			t.Errorf("%s: %v", s.name, gotErr)
		case string(got) != s.want:
			t.Errorf("%s: value %q, want %q", s.name, got, s.want)
		}
		if pids := idlePIDs(d); len(pids) != 1 {
			t.Errorf("%s: %d idle connections (backends %v), want the one", s.name, len(pids), pids)
		} else if conn == 0 {
			conn = pids[0]
		} else if pids[0] != conn {
			t.Errorf("%s: the connection changed (a reconnect); a server's error must leave it usable", s.name)
		}
	}
}

// TestSingleOperationsBetweenPipelinedBatches alternates batches of one (written and read
// by the driver itself) with pipelined batches (pgconn's pipeline mode and, with
// pipelineSync=batch, ExecBatch) on one connection: the stream changes hands between
// the two at each switch, and every operation reads what the one before wrote, on the
// same backend throughout.
func TestSingleOperationsBetweenPipelinedBatches(t *testing.T) {
	for _, sync := range []string{"op", "batch"} {
		t.Run("pipelineSync="+sync, func(t *testing.T) {
			ctx := drivertest.Context(t)
			d := open(t, map[string]string{"mode": "direct", "poolSize": "1", "pipelineSync": sync})
			pl, err := d.NewPipeline(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer pl.Close()
			prefix := fmt.Sprintf("switch-%s-%d-", sync, time.Now().UnixNano())
			var conn uint32
			for round := range 4 {
				batch := make([]driver.PipelineOp, 8)
				for i := range batch {
					batch[i] = driver.PipelineOp{Op: driver.PipelineWrite, Key: fmt.Sprintf("%s%d", prefix, i), Value: []byte(fmt.Sprintf("v%d-%d", round, i))}
				}
				pl.Run(ctx, batch, func(i int, _ []byte, err error) {
					if err != nil {
						t.Errorf("round %d: pipelined write %d: %v", round, i, err)
					}
				})
				for i := range batch {
					want := fmt.Sprintf("v%d-%d", round, i)
					pl.Run(ctx, []driver.PipelineOp{{Op: driver.PipelineRead, Key: batch[i].Key}}, func(_ int, v []byte, err error) {
						if err != nil || string(v) != want {
							t.Errorf("round %d: single read %d after the batch: %q, %v; want %q", round, i, v, err, want)
						}
					})
				}
				one := []driver.PipelineOp{{Op: driver.PipelineWrite, Key: prefix + "0", Value: []byte("single")}}
				pl.Run(ctx, one, func(_ int, _ []byte, err error) {
					if err != nil {
						t.Errorf("round %d: single write: %v", round, err)
					}
				})
				reads := []driver.PipelineOp{{Op: driver.PipelineRead, Key: prefix + "0"}, {Op: driver.PipelineRead, Key: prefix + "1"}}
				pl.Run(ctx, reads, func(i int, v []byte, err error) {
					want := []string{"single", fmt.Sprintf("v%d-1", round)}[i]
					if err != nil || string(v) != want {
						t.Errorf("round %d: pipelined read %d after single operations: %q, %v; want %q", round, i, v, err, want)
					}
				})
				if pids := idlePIDs(d); len(pids) != 1 {
					t.Fatalf("round %d: %d idle connections (backends %v), want the one", round, len(pids), pids)
				} else if conn == 0 {
					conn = pids[0]
				} else if pids[0] != conn {
					t.Fatalf("round %d: the connection changed (a reconnect): the hand-over broke the stream", round)
				}
			}
		})
	}
}
