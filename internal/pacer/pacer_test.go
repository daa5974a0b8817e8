package pacer

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

func TestConstantShape(t *testing.T) {
	tests := []struct {
		rate   Constant
		k      int64
		offset time.Duration
		at     time.Duration
		due    int64
	}{
		{rate: 1000, k: 0, offset: 0, at: 0, due: 1},
		{rate: 1000, k: 1, offset: time.Millisecond, at: 999 * time.Microsecond, due: 1},
		{rate: 1000, k: 10, offset: 10 * time.Millisecond, at: time.Millisecond, due: 2},
		{rate: 3, k: 1, offset: 333333333, at: time.Second, due: 4},
		{rate: 100000, k: 100000, offset: time.Second, at: time.Second, due: 100001},
		{rate: 0.5, k: 1, offset: 2 * time.Second, at: -time.Second, due: 0},
	}
	for _, tc := range tests {
		if got := tc.rate.Offset(tc.k); got != tc.offset {
			t.Errorf("Constant(%v).Offset(%d) = %v, want %v", tc.rate, tc.k, got, tc.offset)
		}
		if got := tc.rate.Due(tc.at); got != tc.due {
			t.Errorf("Constant(%v).Due(%v) = %d, want %d", tc.rate, tc.at, got, tc.due)
		}
	}
}

func TestClosedLoopReturnsAtOnce(t *testing.T) {
	for _, rate := range []float64{0, -5} {
		p := New(rate)
		if p.Rate() != 0 {
			t.Fatalf("rate %v: Rate() = %v, want 0 (closed loop)", rate, p.Rate())
		}
		before := p.Now()
		for i := 0; i < 1000; i++ {
			intended, start, err := p.Acquire(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if start != intended {
				t.Fatalf("closed loop: start %d differs from intended %d", start, intended)
			}
			if intended < before {
				t.Fatalf("closed loop intended %d before the call at %d", intended, before)
			}
		}
		if lag, pending := p.Backlog(); lag != 0 || pending != 0 {
			t.Fatalf("closed loop backlog = %v, %d; want none", lag, pending)
		}
	}
}

// TestOpenLoopSchedule checks that workers together start exactly the operations of the
// schedule, each at or after its intended time, never early.
func TestOpenLoopSchedule(t *testing.T) {
	const rate, workers, perWorker = 20000.0, 4, 500
	p := New(rate)
	anchor := p.sched.Load().anchor
	var mu sync.Mutex
	var got []int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perWorker; i++ {
				intended, start, err := p.Acquire(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				if start < intended {
					t.Errorf("started %v early", time.Duration(intended-start))
				}
				if now := p.Now(); now < start {
					t.Errorf("start %d is in the future (now %d)", start, now)
				}
				mu.Lock()
				got = append(got, intended)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	slices.Sort(got)
	for k, intended := range got {
		if want := anchor + int64(Constant(rate).Offset(int64(k))); intended != want {
			t.Fatalf("operation %d intended at %d, want %d (schedule has gaps or repeats)", k, intended, want)
		}
	}
}

func TestRateChangeReanchors(t *testing.T) {
	p := New(1) // one op per second: op 0 now, op 1 in 1 s
	if _, _, err := p.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	done := make(chan time.Duration)
	go func() {
		start := time.Now()
		_, _, _ = p.Acquire(context.Background()) // claims the slot 1 s ahead
		done <- time.Since(start)
	}()
	time.Sleep(10 * time.Millisecond)
	p.SetRate(100000)
	if got := p.Rate(); got != 100000 {
		t.Fatalf("Rate() = %v after SetRate(100000)", got)
	}
	select {
	case waited := <-done:
		if waited >= time.Second {
			t.Fatalf("waiter slept out the old slot (%v)", waited)
		}
	case <-time.After(900 * time.Millisecond):
		t.Fatal("waiter did not move to the new schedule")
	}
}

func TestBacklogShowsFallingBehind(t *testing.T) {
	p := New(1000)
	time.Sleep(60 * time.Millisecond) // nobody claims: ~60 operations fall due
	lag, pending := p.Backlog()
	if pending < 50 {
		t.Fatalf("pending = %d after 60 ms unclaimed at 1000/s, want ≥ 50", pending)
	}
	if lag < 50*time.Millisecond {
		t.Fatalf("lag = %v after 60 ms unclaimed, want ≥ 50ms", lag)
	}
	// Catching up drains it: claims due operations without waiting.
	for i := int64(0); i < pending; i++ {
		if _, _, err := p.Acquire(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if _, after := p.Backlog(); after > 5 {
		t.Fatalf("pending = %d after claiming the backlog", after)
	}
}

func TestAcquireHonoursContext(t *testing.T) {
	p := New(0.1) // op 0 now, op 1 in 10 s
	if _, _, err := p.Acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, _, err := p.Acquire(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire error = %v, want deadline exceeded", err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Fatalf("Acquire ignored its context for %v", waited)
	}
}

func TestConcurrentRateChanges(t *testing.T) {
	p := New(50000)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				_, _, _ = p.Acquire(ctx)
			}
		}()
	}
	rates := []float64{1000, 0, 200000, 5, 50000}
	for i := 0; ctx.Err() == nil; i++ {
		p.SetRate(rates[i%len(rates)])
		_, _ = p.Backlog()
		time.Sleep(time.Millisecond)
	}
	wg.Wait()
}
