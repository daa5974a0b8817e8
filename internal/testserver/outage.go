package testserver

import (
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

// outageWorkers is how many goroutines drive traffic through an outage.
const outageWorkers = 8

// outageSlack allows for scheduling on a loaded CI machine when judging whether an op
// ended within its timeout; it is not store behaviour.
const outageSlack = 3 * time.Second

// CheckOutage drives write-then-read traffic against d from several goroutines, kills srv
// under it, restarts it, and fails t unless: every failure is classified unavailable or
// timeout, no op outlives opTimeout (a driver that hangs on a dead server would), and
// writes succeed again within recoverWithin of the restart. The server is running when it
// returns. Every driver's integration test calls it, so all drivers meet one standard.
func CheckOutage(t testing.TB, srv *Server, d driver.Driver, opTimeout, recoverWithin time.Duration) {
	t.Helper()
	var (
		stop         atomic.Bool
		ok, failed   atomic.Int64
		wg           sync.WaitGroup
		mu           sync.Mutex
		slowest      time.Duration
		misclassed   []string
		classesCount = map[driver.Class]int{}
	)
	for w := 0; w < outageWorkers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
				start := time.Now()
				key := fmt.Sprintf("outage-%d-%d", w, i%16)
				err := d.Write(ctx, key, []byte("v"))
				if err == nil {
					// A miss is fine: a restarted in-memory store has lost its data.
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
					classesCount[c]++
					if c != driver.ClassUnavailable && c != driver.ClassTimeout && len(misclassed) < 5 {
						misclassed = append(misclassed, fmt.Sprintf("%v: %v", c, err))
					}
				}
				mu.Unlock()
				if err != nil {
					failed.Add(1)
					time.Sleep(10 * time.Millisecond) // an outage loop must not spin
				} else {
					ok.Add(1)
				}
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()

	waitFor(t, "ops before the kill", 30*time.Second, func() bool { return ok.Load() >= 100 })
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	failedAtKill := failed.Load()
	waitFor(t, "failures after the kill", 30*time.Second, func() bool { return failed.Load() >= failedAtKill+20 })
	time.Sleep(time.Second) // keep traffic on the dead server a while

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := srv.Restart(ctx); err != nil {
		t.Fatalf("restart %s: %v", srv.Name, err)
	}
	restarted := time.Now()
	okAtRestart := ok.Load()
	waitFor(t, "ops succeeding after the restart", recoverWithin, func() bool { return ok.Load() >= okAtRestart+50 })
	recovery := time.Since(restarted)
	stop.Store(true)
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	if len(misclassed) > 0 {
		t.Errorf("failures outside unavailable/timeout during the outage:\n%s", strings.Join(misclassed, "\n"))
	}
	if slowest > opTimeout+outageSlack {
		t.Errorf("an op took %v with a %v timeout: the driver hangs on a dead server", slowest, opTimeout)
	}
	t.Logf("%s outage: %d ok, %d failed %v, slowest op %v, recovered %v after the restart",
		srv.Name, ok.Load(), failed.Load(), classesCount, slowest, recovery)
}

// waitFor polls cond until it holds, failing t after limit.
func waitFor(t testing.TB, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", limit, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
