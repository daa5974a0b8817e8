package cli

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/node"
)

// How serve's state note ends: a clean stop removes it (nothing was lost); a panic of
// serve's own goroutine, whose deferred calls run as on a normal return, keeps it with
// the panic's value, and the next serve says the previous one ended in a panic.
func TestServeStateEnds(t *testing.T) {
	snap, err := config.Load(config.Sources{Sets: []string{"driver.name=memory", "workload.readRate=0", "workload.writeRate=0"}})
	if err != nil {
		t.Fatal(err)
	}
	inst := node.New(config.NewStore(snap), nil)
	t.Cleanup(func() { _ = inst.Close() })
	log := slog.New(slog.NewTextHandler(&strings.Builder{}, nil))

	cases := []struct {
		name     string
		panicked any
		want     []string // substrings of the next serve's message; none: no note left
	}{
		{"clean stop", nil, nil},
		{"panic", "index out of range [3] with length 3", []string{"ended in a panic", "index out of range [3] with length 3"}},
		{"long panic value is cut", strings.Repeat("x", 5000), []string{"ended in a panic", strings.Repeat("x", maxPanicNote) + "…)"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "serve-127.0.0.1_7777.state.json")
			end := keepServeState(context.Background(), path, "127.0.0.1:7777", inst, log)
			if _, err := os.Stat(path); err != nil {
				t.Fatalf("no state note while serving: %v", err)
			}
			// As serve does it: the deferred call recovers, ends the note, panics on.
			func() {
				defer func() { _ = recover() }()
				func() {
					defer func() {
						r := recover()
						end(r)
						if r != nil {
							panic(r)
						}
					}()
					if c.panicked != nil {
						panic(c.panicked)
					}
				}()
			}()
			prev, err := readPreviousServe(path)
			if err != nil {
				t.Fatal(err)
			}
			if len(c.want) == 0 {
				if prev != nil {
					t.Fatalf("a clean stop left a note: %+v", prev)
				}
				return
			}
			if prev == nil {
				t.Fatal("the panic removed the state note: the next serve cannot say what was lost")
			}
			for _, w := range c.want {
				if !strings.Contains(prev.Message, w) {
					t.Errorf("message %q does not say %q", prev.Message, w)
				}
			}
			if prev.Panic == "" || len(prev.Panic) > maxPanicNote+len("…") {
				t.Errorf("previousServe.panic = %d bytes, want 1..%d", len(prev.Panic), maxPanicNote+len("…"))
			}
		})
	}
}
