package drivertest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ndbench/ndbench/driver"
)

// sizes returns the value sizes ReadYourWrite checks: the common ones, each capped at the
// store's limit, so the largest value the store accepts is always among them.
func (s *suite) sizes() []int {
	limit := s.h.MaxValueSize
	if limit == 0 {
		limit = 1 << 20
	}
	var out []int
	if !s.h.NoEmptyValues {
		out = append(out, 0)
	}
	for _, n := range []int{1, 100, 256, 64 << 10, 1 << 20} {
		if n = min(n, limit); !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// readYourWrite writes values of every size and reads each back at once.
func (s *suite) readYourWrite(t *testing.T, d driver.Driver) {
	for _, n := range s.sizes() {
		t.Run(fmt.Sprintf("size=%d", n), func(t *testing.T) {
			key := s.key("ryw")
			want := pattern(n, uint64(n))
			if err := write(d, key, slices.Clone(want)); err != nil {
				t.Fatalf("Write(%q) of %d bytes: %v", key, n, err)
			}
			got, err := read(d, key)
			if err != nil {
				t.Fatalf("Read(%q) right after a Write of %d bytes: %v; a value just written must be readable", key, n, err)
			}
			if !equal(got, want) {
				t.Errorf("Read(%q) after a Write of %d bytes: %s; values must round-trip byte-exact", key, n, diff(got, want))
			}
		})
	}
}

// equal is bytes.Equal, spelled out so that nil and empty count as equal on purpose: a
// Read that finds an empty value may return either.
func equal(a, b []byte) bool { return string(a) == string(b) }

// overwrite writes one key several times, shorter then longer, and expects the latest
// value each time: a driver that writes in place or appends would leave old bytes.
func (s *suite) overwrite(t *testing.T, d driver.Driver) {
	key := s.key("overwrite")
	sizes := []int{1000, 10, 5000}
	if !s.h.NoEmptyValues {
		sizes = []int{1000, 10, 0, 5000}
	}
	for i, n := range sizes {
		want := pattern(n, uint64(100+i))
		if err := write(d, key, slices.Clone(want)); err != nil {
			t.Fatalf("Write number %d of %q (%d bytes): %v", i+1, key, n, err)
		}
		got, err := read(d, key)
		if err != nil {
			t.Fatalf("Read(%q) after write number %d: %v", key, i+1, err)
		}
		if !equal(got, want) {
			t.Fatalf("Read(%q) after write number %d (%d bytes): %s; a read must return the latest value written", key, i+1, n, diff(got, want))
		}
	}
}

// notFound reads a key never written, next to one that was (a driver matching prefixes
// or returning a neighbour would find it).
func (s *suite) notFound(t *testing.T, d driver.Driver) {
	key := s.key("never-written")
	if err := write(d, key+"-sibling", []byte("v")); err != nil {
		t.Fatalf("Write(%q): %v", key+"-sibling", err)
	}
	got, err := read(d, key)
	switch {
	case err == nil:
		t.Errorf("Read(%q), a key never written, returned %d bytes and no error; a miss must return an error wrapping driver.ErrNotFound", key, len(got))
	case !errors.Is(err, driver.ErrNotFound):
		t.Errorf("Read(%q), a key never written, failed with %v (class %v); a miss must return an error wrapping driver.ErrNotFound, which the engine counts as a miss rather than a failure", key, err, driver.Classify(err))
	}
}

// valueBufferReuse does what the engine does: it builds the next value in the buffer it
// just passed to Write. It also checks that a slice Read returned stays as it was.
func (s *suite) valueBufferReuse(t *testing.T, d driver.Driver) {
	for _, n := range []int{100, 64 << 10} {
		t.Run(fmt.Sprintf("size=%d", n), func(t *testing.T) {
			buf := pattern(n, 7)
			want1 := slices.Clone(buf)
			k1, k2 := s.key("buffer"), s.key("buffer")
			if err := write(d, k1, buf); err != nil {
				t.Fatalf("Write(%q): %v", k1, err)
			}
			for i := range buf {
				buf[i] = ^buf[i] // every byte changes
			}
			want2 := slices.Clone(buf)
			if err := write(d, k2, buf); err != nil {
				t.Fatalf("Write(%q): %v", k2, err)
			}
			clear(buf)
			got1, err := read(d, k1)
			if err != nil {
				t.Fatalf("Read(%q): %v", k1, err)
			}
			if !equal(got1, want1) {
				t.Errorf("Read(%q) after the caller reused the buffer it passed to Write: %s; Write must not keep value after it returns (copy it if the store keeps it)", k1, diff(got1, want1))
			}
			got2, err := read(d, k2)
			if err != nil {
				t.Fatalf("Read(%q): %v", k2, err)
			}
			if !equal(got2, want2) {
				t.Errorf("Read(%q) after the caller cleared the buffer it passed to Write: %s; Write must not keep value after it returns", k2, diff(got2, want2))
			}
			// The engine validates a read value after other operations have run: later
			// reads and writes must not change it.
			if err := write(d, k1, pattern(n, 8)); err != nil {
				t.Fatalf("Write(%q): %v", k1, err)
			}
			if _, err := read(d, k1); err != nil {
				t.Fatalf("Read(%q): %v", k1, err)
			}
			if !equal(got2, want2) {
				t.Errorf("a slice returned by Read(%q) changed after later operations: %s; the returned slice belongs to the caller", k2, diff(got2, want2))
			}
		})
	}
}

// bulk writes a batch of the size backfill uses, then reads it back through Read and
// ReadBulk, with a missing key in the middle.
func (s *suite) bulk(t *testing.T, d driver.Driver) {
	bw, canWrite := d.(driver.BulkWriter)
	br, canRead := d.(driver.BulkReader)
	if !canWrite && !canRead {
		t.Skip("the driver implements neither driver.BulkWriter nor driver.BulkReader")
	}
	const n = 100
	keys := make([]string, n)
	want := make([][]byte, n)
	for i := range keys {
		keys[i] = s.key("bulk")
		size := 1 + i*37%300
		if i == 0 && !s.h.NoEmptyValues {
			size = 0
		}
		want[i] = pattern(size, uint64(1000+i))
	}
	if canWrite {
		bufs := make([][]byte, n)
		for i := range bufs {
			bufs[i] = slices.Clone(want[i])
		}
		ctx, cancel := opContext()
		err := bw.WriteBulk(ctx, keys, bufs)
		cancel()
		if err != nil {
			t.Fatalf("WriteBulk of %d keys: %v", n, err)
		}
		for _, b := range bufs {
			clear(b) // the engine reuses its buffers
		}
	} else {
		for i, k := range keys {
			if err := write(d, k, want[i]); err != nil {
				t.Fatalf("Write(%q): %v", k, err)
			}
		}
	}
	for i, k := range keys {
		got, err := read(d, k)
		if err != nil {
			t.Fatalf("Read(%q), written by WriteBulk: %v", k, err)
		}
		if !equal(got, want[i]) {
			t.Fatalf("Read(%q), written by WriteBulk (then the caller reused its buffers): %s", k, diff(got, want[i]))
		}
	}
	if !canRead {
		return
	}
	missing := s.key("bulk-missing")
	ask := slices.Concat(keys[:n/2], []string{missing}, keys[n/2:])
	ctx, cancel := opContext()
	got, err := br.ReadBulk(ctx, ask)
	cancel()
	if err != nil {
		t.Fatalf("ReadBulk of %d keys, one missing: %v; a missing key is a nil value, not an error", len(ask), err)
	}
	if len(got) != len(ask) {
		t.Fatalf("ReadBulk of %d keys returned %d values; it must return one per key, in order", len(ask), len(got))
	}
	for i, k := range ask {
		w := []byte(nil)
		if k != missing {
			w = want[slices.Index(keys, k)]
		}
		switch {
		case w == nil && got[i] != nil:
			t.Errorf("ReadBulk value %d, for missing key %q, is %d bytes; a missing key must have a nil value", i, k, len(got[i]))
		case w != nil && got[i] == nil:
			t.Errorf("ReadBulk value %d, for key %q holding %d bytes, is nil, which means missing; an empty value must be a non-nil empty slice", i, k, len(w))
		case !equal(got[i], w):
			t.Errorf("ReadBulk value %d, for key %q: %s; values must be in the order of the keys", i, k, diff(got[i], w))
		}
	}
}

// Concurrency check dimensions: enough goroutines and overlap for the race detector and
// for a driver that mixes up replies between callers to show it.
const (
	concGoroutines = 16
	concOps        = 200 // per goroutine
	concKeys       = 8
)

// concurrentUse has 16 goroutines read and write 8 shared keys. Every value read must be
// one that some goroutine wrote to that very key, and a key stays readable once a write
// of it has completed.
func (s *suite) concurrentUse(t *testing.T, d driver.Driver) {
	type keyState struct {
		mu        sync.Mutex
		written   map[string]bool // every value ever written to the key
		completed atomic.Int64    // writes of the key that returned success
	}
	keys := make([]string, concKeys)
	states := make([]keyState, concKeys)
	for i := range keys {
		keys[i] = s.key("concurrent")
		states[i].written = map[string]bool{}
	}
	var (
		mu       sync.Mutex
		problems []string
		count    int
	)
	report := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		count++
		if len(problems) < 10 {
			problems = append(problems, fmt.Sprintf(format, args...))
		}
	}
	var wg sync.WaitGroup
	for g := range concGoroutines {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 1))
			buf := make([]byte, 0, 512)
			for i := range concOps {
				k := r.IntN(concKeys)
				st := &states[k]
				if r.IntN(2) == 0 {
					buf = fmt.Appendf(buf[:0], "g%02d-op%03d-", g, i)
					for range r.IntN(400) {
						buf = append(buf, byte(r.Uint32()))
					}
					// Recorded before the write starts: a read racing with it may see it.
					st.mu.Lock()
					st.written[string(buf)] = true
					st.mu.Unlock()
					if err := write(d, keys[k], buf); err != nil {
						report("Write(%q) from goroutine %d: %v", keys[k], g, err)
						continue
					}
					st.completed.Add(1)
					for j := range buf {
						buf[j] = '#' // the engine reuses the buffer at once
					}
					continue
				}
				done := st.completed.Load()
				got, err := read(d, keys[k])
				switch {
				case errors.Is(err, driver.ErrNotFound):
					if done > 0 {
						report("Read(%q) from goroutine %d missed, although %d writes of the key had completed before it started", keys[k], g, done)
					}
				case err != nil:
					report("Read(%q) from goroutine %d: %v", keys[k], g, err)
				default:
					st.mu.Lock()
					ok := st.written[string(got)]
					st.mu.Unlock()
					if !ok {
						report("Read(%q) from goroutine %d returned %d bytes starting %q that were never written to this key (another caller's reply, a torn value or a reused buffer)", keys[k], g, len(got), prefix(got, 12))
					}
				}
			}
		})
	}
	wg.Wait()
	if count > 0 {
		t.Errorf("%d of %d operations from %d goroutines on %d shared keys went wrong; a driver must be safe for concurrent use. First ones:\n%s",
			count, concGoroutines*concOps, concGoroutines, concKeys, strings.Join(problems, "\n"))
	}
}

func prefix(b []byte, n int) []byte { return b[:min(n, len(b))] }
