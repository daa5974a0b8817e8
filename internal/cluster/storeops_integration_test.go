//go:build integration

package cluster_test

import (
	"bufio"
	"fmt"
	"math"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// opLog is every GET Redis executed, read through MONITOR: each with Redis's own time of
// execution and the client's address. A second of load is then counted by when the store
// served its operations, whatever this test process was doing then: a sampler asking
// Redis for its count every 100 ms reads it late when the test process stalls on a
// shared machine, and a late count moves operations into the wrong second.
type opLog struct {
	mu  sync.Mutex
	ops []storeOp
}

// storeOp is one GET as Redis executed it.
type storeOp struct {
	at     time.Time
	client string // the client's IP address
}

// monitorGets starts reading MONITOR on Redis at addr until the test ends.
func monitorGets(t *testing.T, addr string) *opLog {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReaderSize(c, 1<<16)
	if _, err := c.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatal(err)
	}
	if l, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(l, "+OK") {
		t.Fatalf("MONITOR on %s: %q %v", addr, l, err)
	}
	ol := &opLog{}
	stopped := make(chan struct{})
	t.Cleanup(func() { c.Close(); <-stopped })
	go func() {
		defer close(stopped)
		for {
			l, err := r.ReadSlice('\n')
			if err != nil {
				return
			}
			if op, ok := parseMonitorGet(l); ok {
				ol.mu.Lock()
				ol.ops = append(ol.ops, op)
				ol.mu.Unlock()
			}
		}
	}()
	return ol
}

// parseMonitorGet reads a MONITOR line, `+1700000000.123456 [0 10.0.0.2:4321] "get" "k"`,
// and says whether it is a GET.
func parseMonitorGet(l []byte) (storeOp, bool) {
	s := strings.TrimPrefix(strings.TrimRight(string(l), "\r\n"), "+")
	ts, rest, ok := strings.Cut(s, " [")
	if !ok {
		return storeOp{}, false
	}
	who, cmd, ok := strings.Cut(rest, "] ")
	if !ok || !strings.HasPrefix(strings.ToLower(cmd), `"get"`) {
		return storeOp{}, false
	}
	sec, frac, _ := strings.Cut(ts, ".")
	secs, err1 := strconv.ParseInt(sec, 10, 64)
	us, err2 := strconv.ParseInt(frac, 10, 64)
	if err1 != nil || err2 != nil {
		return storeOp{}, false
	}
	_, hostport, _ := strings.Cut(who, " ")
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		host = hostport
	}
	return storeOp{at: time.Unix(secs, us*1000), client: host}, true
}

// snapshot returns the ops seen so far, in the store's order.
func (ol *opLog) snapshot() []storeOp {
	ol.mu.Lock()
	defer ol.mu.Unlock()
	return slices.Clone(ol.ops)
}

// count returns how many GETs the store served from from until to.
func count(ops []storeOp, from, to time.Time) int {
	i := sort.Search(len(ops), func(k int) bool { return !ops[k].at.Before(from) })
	j := sort.Search(len(ops), func(k int) bool { return !ops[k].at.Before(to) })
	return j - i
}

// second is a window of one second at the store.
type second struct {
	at     time.Time
	n      int     // GETs served in it
	over   float64 // n beyond the target
	credit int     // what a stall held back in the two seconds before (see stallCredit)
}

// stallCredit is what the clients were short of in the two seconds before at, tenth by
// tenth, each against its own rate: what a stall of the store or of a node held back
// there, which open loop sends late, in the second from at (a stall of several seconds
// is caught up in bursts as the nodes get the CPU back: 4 s were seen). A node that runs more than
// its share follows no such dip. A client's rate is the upper quartile of its tenths
// over the three seconds around (from 2 s before at to 1 s after), from its first GET
// among them: the tenths before it (a node not yet started, or paused) are not a stall.
// The upper quartile, not the median: at a load of 20 stalls took up to half of those
// tenths (1.1 s with no GET at all, then another 0.4 s).
func stallCredit(byClient map[string][]storeOp, at time.Time) int {
	const tenth = 100 * time.Millisecond
	credit := 0
	for _, ops := range byClient {
		var tenths [30]int
		first := -1
		for i := range tenths {
			from := at.Add(-2*time.Second + time.Duration(i)*tenth)
			if tenths[i] = count(ops, from, from.Add(tenth)); tenths[i] > 0 && first < 0 {
				first = i
			}
		}
		if first < 0 || first >= 20 {
			continue
		}
		running := slices.Clone(tenths[first:])
		slices.Sort(running)
		rate := running[len(running)*3/4]
		for _, n := range tenths[first:20] {
			credit += max(0, rate-n)
		}
	}
	return credit
}

// worstSecond returns, of the windows of one second from from to to that begin at a GET,
// the one whose GETs beyond target, less what a stall held back in the two seconds before
// it (stallCredit), are the most.
func (ol *opLog) worstSecond(target float64, from, to time.Time) second {
	ops := ol.snapshot()
	byClient := map[string][]storeOp{}
	for _, op := range ops {
		byClient[op.client] = append(byClient[op.client], op)
	}
	worst := second{over: math.Inf(-1)}
	for _, op := range ops {
		a := op.at
		if a.Before(from) {
			continue
		}
		if a.Add(time.Second).After(to) {
			break
		}
		n := count(ops, a, a.Add(time.Second))
		s := second{at: a, n: n, over: float64(n) - target}
		if s.over <= worst.over-float64(worst.credit) {
			continue // no credit can make it worse
		}
		s.credit = stallCredit(byClient, a)
		if s.over-float64(s.credit) > worst.over-float64(worst.credit) {
			worst = s
		}
	}
	return worst
}

// aheadOfShare returns how far ops (one client's), from since to to, got ahead of rate
// at most: the GETs sent since since beyond rate × the time since then, at the instant
// that was most, and the GETs sent until then.
func aheadOfShare(ops []storeOp, since, to time.Time, rate float64) (ahead float64, at time.Time, n int) {
	ahead, at = math.Inf(-1), since
	first := count(ops, time.Time{}, since)
	for k := first; k < len(ops) && !ops[k].at.After(to); k++ {
		sent := k - first + 1
		if a := float64(sent) - rate*ops[k].at.Sub(since).Seconds(); a > ahead {
			ahead, at, n = a, ops[k].at, sent
		}
	}
	return ahead, at, n
}

// of returns the GETs of the client at host.
func (ol *opLog) of(host string) []storeOp {
	var ops []storeOp
	for _, op := range ol.snapshot() {
		if op.client == host {
			ops = append(ops, op)
		}
	}
	return ops
}

// perTenth lists the GETs per tenth of a second by client, from d before at to d after.
func (ol *opLog) perTenth(at time.Time, d time.Duration) string {
	ops := ol.snapshot()
	type slot struct {
		t time.Time
		n map[string]int
	}
	var slots []slot
	for _, op := range ops {
		if op.at.Before(at.Add(-d)) || op.at.After(at.Add(d)) {
			continue
		}
		t := op.at.Truncate(100 * time.Millisecond)
		if len(slots) == 0 || !slots[len(slots)-1].t.Equal(t) {
			slots = append(slots, slot{t, map[string]int{}})
		}
		slots[len(slots)-1].n[op.client]++
	}
	var b strings.Builder
	for _, s := range slots {
		ks := make([]string, 0, len(s.n))
		for k := range s.n {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		fmt.Fprintf(&b, "\n  %s", s.t.Format("05.0"))
		for _, k := range ks {
			fmt.Fprintf(&b, " %s:%d", k, s.n[k])
		}
	}
	return b.String()
}

// TestStoreSideChecks: the partition tests' measures of a store's log flag a node that
// runs more than its share or sends a backlog, and not the catch-up of a stall. Three
// clients send 400 GETs a second each for 10 s, evenly, and then, per case, what the
// case adds or moves.
func TestStoreSideChecks(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	steady := func(client string, from, to time.Duration, rate float64) []storeOp {
		var ops []storeOp
		for d := from; d < to; d += time.Duration(float64(time.Second) / rate) {
			ops = append(ops, storeOp{at: t0.Add(d), client: client})
		}
		return ops
	}
	// burst is n GETs of client spread over the 20 ms from at.
	burst := func(client string, at time.Duration, n int) []storeOp {
		var ops []storeOp
		for i := range n {
			ops = append(ops, storeOp{at: t0.Add(at + time.Duration(i)*20*time.Millisecond/time.Duration(n)), client: client})
		}
		return ops
	}
	// stalled drops every GET from from to to and sends them at to instead.
	stalled := func(ops []storeOp, from, to time.Duration) []storeOp {
		out := ops[:0]
		for _, op := range ops {
			if d := op.at.Sub(t0); d >= from && d < to {
				op.at = t0.Add(to)
			}
			out = append(out, op)
		}
		return out
	}
	fleet := func() []storeOp {
		return slices.Concat(steady("a", 0, 10*time.Second, 400), steady("b", 0, 10*time.Second, 400), steady("c", 0, 10*time.Second, 400))
	}
	for line, want := range map[string]bool{
		"+1700000000.123456 [0 10.0.0.2:4321] \"get\" \"T7\"\r\n":       true,
		"+1700000000.123456 [0 10.0.0.2:4321] \"GET\" \"T7\"\r\n":       true,
		"+1700000000.123456 [0 10.0.0.2:4321] \"set\" \"T7\" \"v\"\r\n": false,
		"+1700000000.123456 [0 unix:/tmp/r.sock] \"info\"\r\n":          false,
	} {
		op, ok := parseMonitorGet([]byte(line))
		if ok != want || ok && (op.client != "10.0.0.2" || !op.at.Equal(time.Unix(1700000000, 123456000))) {
			t.Errorf("MONITOR line %q: %+v %v, want a GET (%v) from 10.0.0.2 at 1700000000.123456", line, op, ok, want)
		}
	}
	allowed := fleetTarget*0.01 + fleetTarget*lagAllowance.Seconds()
	for _, tc := range []struct {
		name  string
		ops   []storeOp
		flags bool
	}{
		{"steady", fleet(), false},
		{"a stall of 300 ms caught up at once", stalled(fleet(), 5*time.Second, 5300*time.Millisecond), false},
		{"a stall of 1 s caught up at once", stalled(fleet(), 5*time.Second, 6*time.Second), false},
		{"stalls of 1.1 s and 0.4 s", stalled(stalled(fleet(), 5*time.Second, 6100*time.Millisecond), 6400*time.Millisecond, 6800*time.Millisecond), false},
		{"a fourth node running its share for 1.5 s on top", slices.Concat(fleet(), steady("d", 4*time.Second, 5500*time.Millisecond, 400)), true},
		{"a node sending 300 GETs of backlog at once", slices.Concat(fleet(), burst("c", 5*time.Second, 300)), true},
		{"a node stalled for 300 ms and caught up", slices.Concat(steady("a", 0, 10*time.Second, 400), steady("b", 0, 10*time.Second, 400), stalled(steady("c", 0, 10*time.Second, 400), 5*time.Second, 5300*time.Millisecond)), false},
		{"a node started at 5 s sending 200 GETs at once", slices.Concat(steady("a", 0, 10*time.Second, 400), steady("b", 0, 10*time.Second, 400), burst("c", 5*time.Second, 200), steady("c", 5*time.Second, 10*time.Second, 400)), true},
		{"a stall and a backlog of 300 GETs after it", slices.Concat(stalled(fleet(), 5*time.Second, 5300*time.Millisecond), burst("c", 5300*time.Millisecond, 300)), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slices.SortStableFunc(tc.ops, func(a, b storeOp) int { return a.at.Compare(b.at) })
			ol := &opLog{ops: tc.ops}
			w := ol.worstSecond(fleetTarget, t0.Add(time.Second), t0.Add(10*time.Second))
			if flagged := w.over-float64(w.credit) > allowed; flagged != tc.flags {
				t.Errorf("the busiest second (from %s) had %d GETs, %.0f over, %d held back before: flagged %v, want %v",
					w.at.Format("05.000"), w.n, w.over, w.credit, flagged, tc.flags)
			}
		})
	}
	// A node started again at 5 s, at its share of 400/s (checkNodeNoBacklog's bound).
	again := t0.Add(5 * time.Second)
	for _, tc := range []struct {
		name  string
		ops   []storeOp
		flags bool
	}{
		{"at its share", steady("c", 5*time.Second, 10*time.Second, 400), false},
		{"a stall of 300 ms after its start, caught up", stalled(steady("c", 5*time.Second, 10*time.Second, 400), 5100*time.Millisecond, 5400*time.Millisecond), false},
		{"100 GETs of backlog at its start", slices.Concat(burst("c", 5*time.Second, 100), steady("c", 5*time.Second, 10*time.Second, 400)), true},
		{"its share and a half for a second", slices.Concat(steady("c", 5*time.Second, 10*time.Second, 400), steady("c", 7*time.Second, 8*time.Second, 200)), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slices.SortStableFunc(tc.ops, func(a, b storeOp) int { return a.at.Compare(b.at) })
			got, at, n := aheadOfShare(tc.ops, again, t0.Add(10*time.Second), 400)
			if flagged := got > fleetTarget*0.01+400*lagAllowance.Seconds(); flagged != tc.flags {
				t.Errorf("%d GETs in the %v after its start, %.1f ahead of its share: flagged %v, want %v", n, at.Sub(again), got, flagged, tc.flags)
			}
		})
	}
}
