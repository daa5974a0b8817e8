package driver

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeConn is a connection of the tests: its number, and whether it was closed.
type fakeConn struct {
	id     int
	closed atomic.Bool
}

// opener counts the connections it opens, the most in flight at once, and fails from
// call failFrom on (0: never).
type opener struct {
	calls, inFlight, most atomic.Int32
	failFrom              int32
	mu                    sync.Mutex
	opened                []*fakeConn
}

func (o *opener) open(context.Context) (*fakeConn, error) {
	n := o.calls.Add(1)
	in := o.inFlight.Add(1)
	defer o.inFlight.Add(-1)
	for {
		m := o.most.Load()
		if in <= m || o.most.CompareAndSwap(m, in) {
			break
		}
	}
	runtime.Gosched() // let others start while this one is "connecting"
	if o.failFrom > 0 && n >= o.failFrom {
		return nil, errors.New("connection refused")
	}
	c := &fakeConn{id: int(n)}
	o.mu.Lock()
	o.opened = append(o.opened, c)
	o.mu.Unlock()
	return c, nil
}

func closeFake(c *fakeConn) { c.closed.Store(true) }

// A set filled for n workers holds n connections, counts those already waiting, hands
// each out once, and closes what waited too long on its clock.
func TestWarmConnsFillTakeExpire(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	w := NewWarmConns(10*time.Second, clock, closeFake)
	var o opener
	if err := w.Fill(ctx, "a", 5, o.open); err != nil {
		t.Fatal(err)
	}
	if err := w.Fill(ctx, "a", 5, o.open); err != nil {
		t.Fatal(err)
	}
	if err := w.Fill(ctx, "b", 2, o.open); err != nil {
		t.Fatal(err)
	}
	if got := o.calls.Load(); got != 7 {
		t.Errorf("opened %d connections for 5 under a (twice) and 2 under b, want 7", got)
	}
	if got := w.Len(); got != 7 {
		t.Errorf("Len %d, want 7", got)
	}
	seen := map[int]bool{}
	for range 5 {
		c, ok := w.Take("a")
		if !ok {
			t.Fatal("Take(a) found none of the five")
		}
		if seen[c.id] || c.closed.Load() {
			t.Fatalf("connection %d handed out twice or closed", c.id)
		}
		seen[c.id] = true
	}
	if _, ok := w.Take("a"); ok {
		t.Error("a sixth Take(a) found a connection")
	}
	// b's two wait past keepFor: Take closes them and finds none.
	mu.Lock()
	now = now.Add(10*time.Second + time.Nanosecond)
	mu.Unlock()
	if _, ok := w.Take("b"); ok {
		t.Error("Take(b) handed out a connection that waited past keepFor")
	}
	closed := 0
	for _, c := range o.opened {
		if c.closed.Load() {
			closed++
		}
	}
	if closed != 2 || w.Len() != 0 {
		t.Errorf("%d closed (want b's 2), %d waiting (want 0)", closed, w.Len())
	}
	var none *WarmConns[*fakeConn]
	if _, ok := none.Take("a"); ok {
		t.Error("a nil set handed out a connection")
	}
}

// Fill keeps at most WarmAtOnce connects in flight, and stops at the first failure: a
// server that refuses costs one wave, not ten thousand connects.
func TestWarmConnsFillBoundsAndStops(t *testing.T) {
	cases := []struct {
		name      string
		failFrom  int32
		n         int
		wantErr   bool
		wantCalls func(int32) bool
	}{
		{"all open", 0, 1000, false, func(c int32) bool { return c == 1000 }},
		{"every connect fails", 1, 10000, true, func(c int32) bool { return c <= 2*WarmAtOnce }},
		{"fails after 100", 101, 10000, true, func(c int32) bool { return c >= 101 && c <= 101+2*WarmAtOnce }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := NewWarmConns(0, nil, closeFake)
			o := opener{failFrom: tc.failFrom}
			err := w.Fill(context.Background(), "", tc.n, o.open)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Fill: %v, want an error: %v", err, tc.wantErr)
			}
			if c := o.calls.Load(); !tc.wantCalls(c) {
				t.Errorf("%d connects for %d workers", c, tc.n)
			}
			if m := o.most.Load(); m > WarmAtOnce {
				t.Errorf("%d connects in flight at once, want at most %d", m, WarmAtOnce)
			}
			if got := w.Len(); got != len(o.opened) {
				t.Errorf("%d waiting, %d opened: every opened connection waits", got, len(o.opened))
			}
		})
	}
}

// Fill on a context that ends stops and says so; Close closes what waits and whatever a
// Fill still running opens afterwards.
func TestWarmConnsCancelAndClose(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	w := NewWarmConns(0, nil, closeFake)
	var o opener
	if err := w.Fill(ctx, "", 100, o.open); !errors.Is(err, context.Canceled) {
		t.Errorf("Fill on a cancelled context: %v, want context.Canceled", err)
	}
	if err := w.Fill(context.Background(), "", 3, o.open); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if _, ok := w.Take(""); ok {
		t.Error("Take after Close found a connection")
	}
	if err := w.Fill(context.Background(), "", 2, o.open); err != nil {
		t.Fatal(err)
	}
	for _, c := range o.opened {
		if !c.closed.Load() {
			t.Errorf("connection %d open after Close", c.id)
		}
	}
	if w.Len() != 0 {
		t.Errorf("%d waiting after Close", w.Len())
	}
}
