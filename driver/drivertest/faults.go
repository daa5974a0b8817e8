package drivertest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
)

// outcome is how one call made through call ended.
type outcome struct {
	err      error
	took     time.Duration
	returned bool // false: still running when call gave up waiting
	panicked any
}

// call runs f, recovering a panic, and waits at most limit for it to return.
func call(limit time.Duration, f func() error) outcome {
	start := time.Now()
	done := make(chan outcome, 1)
	go func() {
		var o outcome
		defer func() {
			o.panicked = recover()
			o.took, o.returned = time.Since(start), true
			done <- o
		}()
		o.err = f()
	}()
	select {
	case o := <-done:
		return o
	case <-time.After(limit):
		return outcome{took: limit}
	}
}

// namedOp is one driver operation for the checks that try them all.
type namedOp struct {
	name string
	do   func(ctx context.Context) error
}

// ops returns Read, Write and, when the driver has them, ReadBulk and WriteBulk on key.
func ops(d driver.Driver, key string) []namedOp {
	out := []namedOp{
		{"Read", func(ctx context.Context) error { _, err := d.Read(ctx, key); return err }},
		{"Write", func(ctx context.Context) error { return d.Write(ctx, key, []byte("w")) }},
	}
	if br, ok := d.(driver.BulkReader); ok {
		out = append(out, namedOp{"ReadBulk", func(ctx context.Context) error { _, err := br.ReadBulk(ctx, []string{key}); return err }})
	}
	if bw, ok := d.(driver.BulkWriter); ok {
		out = append(out, namedOp{"WriteBulk", func(ctx context.Context) error { return bw.WriteBulk(ctx, []string{key}, [][]byte{[]byte("w")}) }})
	}
	return out
}

// cancelledContext calls every operation with a context cancelled before the call: the
// engine cancels an operation's context when it abandons the operation (shutdown, a
// stopped op class), and a driver that carries on anyway keeps the store busy for nothing.
func (s *suite) cancelledContext(t *testing.T, d driver.Driver) {
	key := s.key("cancelled")
	if err := write(d, key, []byte("v")); err != nil {
		t.Fatalf("Write(%q): %v", key, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, op := range ops(d, key) {
		o := call(10*time.Second, func() error { return op.do(ctx) })
		switch {
		case o.panicked != nil:
			t.Errorf("%s with a cancelled context panicked: %v", op.name, o.panicked)
		case !o.returned:
			t.Errorf("%s with a cancelled context did not return within %v; a driver must honour ctx", op.name, o.took)
		case o.err == nil:
			t.Errorf("%s with an already-cancelled context succeeded; a driver must check ctx and fail the operation", op.name)
		case errors.Is(o.err, driver.ErrNotFound):
			t.Errorf("%s with a cancelled context returned %v, which wraps driver.ErrNotFound; a cancelled operation is a failure, not a miss", op.name, o.err)
		case o.took > prompt:
			t.Errorf("%s with a cancelled context took %v to fail; it must give up within %v", op.name, o.took.Round(time.Millisecond), prompt)
		}
	}
	s.cancelledWritesStayOut(t, d, ctx)
}

// cancelledWriteTries is how many cancelled writes cancelledWritesStayOut makes: a driver
// that races its library (go-redis's autopipeliner returned a finished batch's result
// before it looked at the context) fails one call only now and then, but sends every one.
const cancelledWriteTries = 100

// cancelledWritesStayOut checks that a write whose context ended before the call is not
// sent: one that lands after its caller was told it failed is a write the report does
// not count. It reads the keys back with live contexts, so it needs misses to be
// driver.ErrNotFound and is left out where the harness skips that check.
func (s *suite) cancelledWritesStayOut(t *testing.T, d driver.Driver, cancelled context.Context) {
	if _, skip := s.h.Skip[CheckNotFound]; skip {
		return
	}
	keys := make([]string, cancelledWriteTries)
	for i := range keys {
		keys[i] = s.key("cancelled-write")
		if err := d.Write(cancelled, keys[i], []byte("w")); err == nil {
			t.Errorf("Write(%q) with an already-cancelled context succeeded (try %d of %d); a driver must check ctx and fail the operation", keys[i], i+1, len(keys))
			return
		}
	}
	landed := 0
	for _, k := range keys {
		switch _, err := read(d, k); {
		case err == nil:
			landed++
		case !errors.Is(err, driver.ErrNotFound):
			t.Fatalf("Read(%q), to see whether a cancelled write landed: %v", k, err)
		}
	}
	if landed > 0 {
		t.Errorf("%d of %d writes with an already-cancelled context failed but reached the store; a driver must not send an operation whose context has ended", landed, len(keys))
	}
}

// stallDeadline is the deadline of operations on a paused server.
const stallDeadline = 300 * time.Millisecond

// deadlineOnStall pauses the server, so requests reach it and get no answer, and checks
// that an operation ends by its context's deadline as a timeout, then that the driver
// serves again once the server resumes.
func (s *suite) deadlineOnStall(t *testing.T) {
	if s.h.Pause == nil {
		t.Skip("Harness.Pause is not set: the suite cannot stall the server")
	}
	d := s.open(t, nil)
	key := s.key("stall")
	if err := write(d, key, []byte("v")); err != nil {
		t.Fatalf("Write(%q) before the stall: %v", key, err)
	}
	resume, err := s.h.Pause()
	if err != nil {
		t.Fatalf("Harness.Pause: %v", err)
	}
	paused := true
	defer func() {
		if paused {
			resume()
		}
	}()
	for _, op := range ops(d, key) {
		ctx, cancel := context.WithTimeout(context.Background(), stallDeadline)
		o := call(stallDeadline+30*time.Second, func() error { return op.do(ctx) })
		cancel()
		if o.returned {
			t.Logf("%s with a %v deadline on a paused server returned after %v: %v", op.name, stallDeadline, o.took.Round(time.Millisecond), o.err)
		}
		switch {
		case o.panicked != nil:
			t.Errorf("%s on a paused server panicked: %v", op.name, o.panicked)
		case !o.returned:
			t.Errorf("%s with a %v deadline on a paused server did not return within %v: a stalled store hangs the worker", op.name, stallDeadline, o.took)
		case o.err == nil:
			t.Errorf("%s succeeded while the server was paused; the operation must reach the store (no client-side cache) for this check", op.name)
		case o.took > stallDeadline+prompt:
			t.Errorf("%s with a %v deadline on a paused server returned after %v: a driver must give up when ctx's deadline passes, not when its own socket timeout does", op.name, stallDeadline, o.took.Round(time.Millisecond))
		case driver.Classify(o.err) != driver.ClassTimeout:
			t.Errorf("%s cut short by its deadline failed with class %v (%v); it must classify as timeout (keep context.DeadlineExceeded in the chain, or wrap with driver.Wrap(driver.ClassTimeout, err))", op.name, driver.Classify(o.err), o.err)
		}
	}
	resume()
	paused = false
	// Connections that timed out may be broken; the driver must replace them by itself.
	waitFor(t, "the driver to serve again after the server resumed", 15*time.Second, func() bool {
		k := s.key("after-stall")
		if write(d, k, []byte("v")) != nil {
			return false
		}
		got, err := read(d, k)
		return err == nil && string(got) == "v"
	})
}

// liveReconfigure switches every live option to its LiveValues entry through Reconfigure
// and back, checking read-your-write after each switch.
func (s *suite) liveReconfigure(t *testing.T) {
	base, err := s.decode(s.h.Options)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := driver.Schema(base)
	if err != nil {
		t.Fatal(err)
	}
	liveValues := map[string]string{}
	for name, v := range s.h.LiveValues {
		canon, ok := driver.Canonical(schema, name)
		if !ok {
			t.Errorf("Harness.LiveValues names %q, which is not an option of driver %s", name, s.h.Name)
			continue
		}
		liveValues[canon] = v
	}
	var live []driver.Option
	var missing []string
	for _, o := range schema {
		_, has := liveValues[o.Name]
		switch {
		case o.Live && !has:
			missing = append(missing, o.Name)
		case o.Live:
			live = append(live, o)
		case has:
			t.Errorf("Harness.LiveValues names %q, which is not marked live; only live options change through Reconfigure", o.Name)
		}
	}
	if len(missing) > 0 {
		what := "option " + missing[0] + " is"
		if len(missing) > 1 {
			what = "options " + strings.Join(missing, ", ") + " are"
		}
		t.Errorf("%s marked live, but Harness.LiveValues has no second value for it: give each live option one, so the suite can switch it through Reconfigure", what)
	}
	if len(live) == 0 {
		if len(missing) == 0 {
			t.Skip("the driver has no live options")
		}
		return
	}
	d := s.open(t, nil)
	rc, ok := d.(driver.Reconfigurer)
	if !ok {
		t.Fatalf("the driver has options marked live but does not implement driver.Reconfigurer")
	}
	for _, o := range live {
		t.Run(o.Name, func(t *testing.T) {
			v := liveValues[o.Name]
			shownV := v
			if o.Secret {
				shownV = driver.Redacted
			}
			// Harness.Options may set the option under an alias; the new value replaces it.
			vals := map[string]string{}
			for k, x := range s.h.Options {
				if c, _ := driver.Canonical(schema, k); c != o.Name {
					vals[k] = x
				}
			}
			vals[o.Name] = v
			changed, err := s.decode(vals)
			if err != nil {
				t.Fatalf("Harness.LiveValues[%q] = %q is not a valid value: %v", o.Name, shownV, err)
			}
			if liveChanged, _ := driver.Changed(base, changed); len(liveChanged) != 1 {
				t.Fatalf("Harness.LiveValues[%q] = %q is the value the driver already has; give a different valid value", o.Name, shownV)
			}
			s.reconfigure(t, rc, d, changed, fmt.Sprintf("%s=%s", o.Name, shownV))
			s.reconfigure(t, rc, d, base, fmt.Sprintf("%s back to its first value", o.Name))
		})
	}
}

// reconfigure applies opts and checks the driver still reads its writes.
func (s *suite) reconfigure(t *testing.T, rc driver.Reconfigurer, d driver.Driver, opts any, what string) {
	t.Helper()
	ctx, cancel := opContext()
	err := rc.Reconfigure(ctx, opts)
	cancel()
	if err != nil {
		t.Fatalf("Reconfigure with %s: %v", what, err)
	}
	key := s.key("reconfigured")
	want := pattern(100, 3)
	if err := write(d, key, want); err != nil {
		t.Fatalf("Write(%q) after Reconfigure with %s: %v", key, what, err)
	}
	got, err := read(d, key)
	if err != nil {
		t.Fatalf("Read(%q) after Reconfigure with %s: %v", key, what, err)
	}
	if !equal(got, want) {
		t.Fatalf("Read(%q) after Reconfigure with %s: %s", key, what, diff(got, want))
	}
}

// closed calls every operation on a closed driver. The engine closes a driver only after
// its workers stopped, but a driver that reconnects after Close leaks what Close released,
// and one that panics takes the process down with it.
func (s *suite) closed(t *testing.T) {
	d := s.openUnmanaged(t, nil)
	key := s.key("closed")
	if err := write(d, key, []byte("v")); err != nil {
		_ = closeWithin(d, closeTimeout)
		t.Fatalf("Write(%q) before Close: %v", key, err)
	}
	if err := closeWithin(d, closeTimeout); err != nil {
		t.Errorf("Close of a healthy driver: %v", err)
	}
	for _, op := range ops(d, key) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		o := call(15*time.Second, func() error { return op.do(ctx) })
		cancel()
		switch {
		case o.panicked != nil:
			t.Errorf("%s after Close panicked: %v; it must return an error", op.name, o.panicked)
		case !o.returned:
			t.Errorf("%s after Close did not return within %v", op.name, o.took)
		case o.err == nil:
			t.Errorf("%s after Close succeeded; a closed driver must fail operations rather than reconnect (Close releases everything)", op.name)
		case errors.Is(o.err, driver.ErrNotFound):
			t.Errorf("%s after Close returned %v, which wraps driver.ErrNotFound; it would be counted as a miss, not a failure", op.name, o.err)
		}
	}
}

// Outage check dimensions.
const (
	outageWorkers = 8
	// outageSlack allows for scheduling on a loaded machine when judging whether an
	// operation ended within its timeout; it is not store behaviour.
	outageSlack = 3 * time.Second
	// outageOtherShare is the share of failures during an outage that may be of class
	// other: a store coming up may answer oddly for a moment, but a driver whose outage
	// failures are mostly unclassified hides the outage from its users.
	outageOtherShare = 0.10
)

// outage drives write-then-read traffic from several goroutines, stops the store under it
// and starts it again, all through one driver.
func (s *suite) outage(t *testing.T) {
	o := s.h.Outage
	if o == nil {
		t.Skip("Harness.Outage is not set: the suite cannot stop and start the server")
	}
	opTimeout := cmp.Or(o.OpTimeout, 2*time.Second)
	recoverWithin := cmp.Or(o.RecoverWithin, 30*time.Second)
	d := s.open(t, o.Options)
	prefix := s.key("outage")

	var (
		stop       atomic.Bool
		ok, failed atomic.Int64
		wg         sync.WaitGroup
		mu         sync.Mutex
		slowest    time.Duration
		byClass    [driver.NumClasses]int
		samples    [driver.NumClasses][]string
	)
	for w := range outageWorkers {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
				start := time.Now()
				key := fmt.Sprintf("%s-%d-%d", prefix, w, i%16)
				err := d.Write(ctx, key, []byte("v"))
				if err == nil {
					// A miss is fine: a store that keeps data in memory lost it.
					if _, err = d.Read(ctx, key); errors.Is(err, driver.ErrNotFound) {
						err = nil
					}
				}
				took := time.Since(start)
				cancel()
				mu.Lock()
				slowest = max(slowest, took)
				if err != nil {
					c := driver.Classify(err)
					byClass[c]++
					if len(samples[c]) < 3 {
						samples[c] = append(samples[c], err.Error())
					}
				}
				mu.Unlock()
				if err != nil {
					failed.Add(1)
					time.Sleep(10 * time.Millisecond) // a failing loop must not spin
				} else {
					ok.Add(1)
				}
			}
		})
	}
	stopTraffic := func() { stop.Store(true); wg.Wait() }
	defer stopTraffic()
	down := false
	defer func() {
		// A check that failed half-way leaves the store running for the tests after it.
		if down {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			if err := o.Start(ctx); err != nil {
				t.Errorf("Outage.Start after the check failed: %v", err)
			}
		}
	}()

	waitFor(t, "100 operations to succeed before the outage", 30*time.Second, func() bool { return ok.Load() >= 100 })
	if err := o.Stop(); err != nil {
		t.Fatalf("Outage.Stop: %v", err)
	}
	down = true
	failedAtStop := failed.Load()
	waitFor(t, "operations to fail after Outage.Stop (do they still reach the store?)", 30*time.Second, func() bool { return failed.Load() >= failedAtStop+20 })
	time.Sleep(time.Second) // traffic against a dead store for a while: reconnect loops, pools

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := o.Start(ctx); err != nil {
		t.Fatalf("Outage.Start: %v", err)
	}
	down = false
	started := time.Now()
	okAtStart := ok.Load()
	waitFor(t, "50 operations to succeed after Outage.Start, through the driver opened before the outage", recoverWithin, func() bool { return ok.Load() >= okAtStart+50 })
	recovery := time.Since(started)
	stopTraffic()

	mu.Lock()
	defer mu.Unlock()
	total := int(failed.Load())
	for _, c := range []driver.Class{driver.ClassThrottled, driver.ClassRejected} {
		if byClass[c] > 0 {
			t.Errorf("%d failures during the outage classified %v, e.g.:\n%s\na store that is down is unavailable (or a timeout): wrap such errors with driver.Wrap(driver.ClassUnavailable, err)",
				byClass[c], c, strings.Join(samples[c], "\n"))
		}
	}
	if other := byClass[driver.ClassOther]; float64(other) > outageOtherShare*float64(total) {
		t.Errorf("%d of %d failures during the outage are unclassified (class other), e.g.:\n%s\nat most %.0f%% may be: classify the client's connection errors as unavailable or timeout",
			other, total, strings.Join(samples[driver.ClassOther], "\n"), outageOtherShare*100)
	}
	if slowest > opTimeout+outageSlack {
		t.Errorf("an operation took %v with a %v deadline: the driver hangs on a dead store", slowest.Round(time.Millisecond), opTimeout)
	}
	counts := make([]string, 0, driver.NumClasses)
	for _, c := range driver.Classes {
		if byClass[c] > 0 {
			counts = append(counts, fmt.Sprintf("%v %d", c, byClass[c]))
		}
	}
	t.Logf("outage: %d ok, %d failed (%s), slowest op %v, recovered %v after Start",
		ok.Load(), total, strings.Join(counts, ", "), slowest.Round(time.Millisecond), recovery.Round(time.Millisecond))
}

// waitFor polls cond until it holds, failing t after limit.
func waitFor(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
