package stats

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/clock"
)

// A class whose operations are recorded once, in their parts (RegisterPart), reports
// exactly what it reported when every operation was recorded in the class as well: the
// same counts, histograms, latencies, start-lag split, cumulative view and failure
// messages, interval after interval. "ref" is recorded the old way, every operation in it
// directly, beside the parts.
func TestPartsCountInTheirClass(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	clk := clock.NewSim(t0)
	c := NewCollector(Config{Shards: 4, Clock: clk})
	class, err := c.Register("mix")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := c.Register("ref")
	if err != nil {
		t.Fatal(err)
	}
	var parts []Op
	for _, name := range []string{"mix.read", "mix.write", "mix.rmw"} {
		op, err := c.RegisterPart(class, name)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, op)
	}
	rmwRead, err := c.Register("mix.rmw.read") // an rmw's part series: not a part of the class
	if err != nil {
		t.Fatal(err)
	}

	rng := rand.New(rand.NewPCG(1, 2))
	for tick := 1; tick <= 5; tick++ {
		// Part of the intervals record nothing in some part, one nothing at all.
		n := 0
		if tick != 3 {
			n = 2000 + rng.IntN(2000)
		}
		var answered int64
		for range n {
			worker := rng.IntN(9)
			p := parts[rng.IntN(len(parts))]
			if tick == 2 {
				p = parts[0]
			}
			cls, in, rs := c.Recorder(class).Shard(worker), c.Recorder(p).Shard(worker), c.Recorder(ref).Shard(worker)
			svc := time.Duration(rng.Int64N(int64(50 * time.Millisecond)))
			resp := svc + time.Duration(rng.Int64N(int64(5*time.Millisecond)))
			if rng.IntN(500) == 0 {
				resp = 3 * time.Hour // clamped
			}
			own := time.Duration(rng.Int64N(int64(resp-svc)+1)) - time.Duration(rng.IntN(2))*(resp+1) // some not known (< 0)
			switch k := rng.IntN(20); {
			case k < 12:
				in.SuccessLag(resp, svc, own)
				rs.SuccessLag(resp, svc, own)
			case k < 15:
				in.MissLag(resp, svc, own)
				rs.MissLag(resp, svc, own)
			case k < 16:
				in.SuccessInvalid(resp, svc, own, Stale)
				rs.SuccessInvalid(resp, svc, own, Stale)
			case k < 17:
				in.MissInvalid(resp, svc, own, Lost)
				rs.MissInvalid(resp, svc, own, Lost)
			case k < 19:
				// A failure goes into the part and the class, as the engine records it.
				err := fmt.Errorf("timeout after %d ms", rng.IntN(30))
				in.FailureErr(driver.ClassTimeout, err)
				cls.FailureErr(driver.ClassTimeout, err)
				rs.FailureErr(driver.ClassTimeout, err)
				answered--
			default:
				// Drops are the class's alone.
				cls.Drop(resp)
				rs.Drop(resp)
				answered--
			}
			answered++
			// Not the class's: recorded in neither.
			c.Recorder(rmwRead).Shard(worker).Success(resp, svc)
		}
		if got, want := c.Recorder(class).Answered(), c.Recorder(ref).Answered(); got != want || got != answered {
			t.Errorf("tick %d: class answered %d, ref %d, want %d", tick, got, want, answered)
		}
		clk.Advance(time.Second)
		iv := c.Tick(clk.Now())
		got, want := iv.Op("mix"), iv.Op("ref")
		if got.Counts != want.Counts {
			t.Errorf("tick %d: class counts %+v, want %+v", tick, got.Counts, want.Counts)
		}
		for _, h := range []struct {
			name      string
			got, want interface{ TotalCount() int64 }
		}{{"response", got.Response, want.Response}, {"service", got.Service, want.Service},
			{"start lag", got.StartLag, want.StartLag}, {"late", got.Late, want.Late}} {
			if !reflect.DeepEqual(h.got, h.want) {
				t.Errorf("tick %d: class %s histogram (%d values) differs from ref's (%d)", tick, h.name, h.got.TotalCount(), h.want.TotalCount())
			}
		}
		gs, ws := iv.Summary().Ops["mix"], iv.Summary().Ops["ref"]
		if !reflect.DeepEqual(gs, ws) {
			t.Errorf("tick %d: class interval summary\n%+v\nwant\n%+v", tick, gs, ws)
		}
		if l := c.Latest(); !reflect.DeepEqual(l.Ops["mix"], l.Ops["ref"]) {
			t.Errorf("tick %d: Latest class %+v, want %+v", tick, l.Ops["mix"], l.Ops["ref"])
		}
		if tick != 3 && gs.Count == 0 {
			t.Fatalf("tick %d: nothing recorded", tick)
		}
	}
	cum := c.Cumulative()
	if !reflect.DeepEqual(cum.Ops["mix"], cum.Ops["ref"]) {
		t.Errorf("cumulative class %+v, want %+v", cum.Ops["mix"], cum.Ops["ref"])
	}
	if cum.Ops["mix"].Count == 0 || cum.Ops["mix"].StartLagOwn == 0 {
		t.Errorf("cumulative class %+v: want operations and a start-lag split", cum.Ops["mix"])
	}
	// The messages' times are the wall clock's at each record, so only the rest compares.
	errs := c.Errors()
	untimed := func(l []ErrorMessage) []ErrorMessage {
		out := make([]ErrorMessage, len(l))
		for i, m := range l {
			out[i] = ErrorMessage{Class: m.Class, Message: m.Message, Count: m.Count}
		}
		return out
	}
	if got, want := untimed(errs["mix"]), untimed(errs["ref"]); !reflect.DeepEqual(got, want) || len(got) == 0 {
		t.Errorf("class failure messages %v, want %v", got, want)
	}
	for _, s := range c.Series() {
		if !reflect.DeepEqual(s.Ops["mix"], s.Ops["ref"]) {
			t.Errorf("series point at %v: class %+v, want %+v", s.Time, s.Ops["mix"], s.Ops["ref"])
		}
	}
	// After a reset the parts' last interval is not counted again.
	c.Recorder(parts[0]).Shard(0).Success(time.Millisecond, time.Millisecond)
	c.Reset()
	clk.Advance(time.Second)
	if iv := c.Tick(clk.Now()); iv.Op("mix").Count() != 0 {
		t.Errorf("after a reset the class counts %d operations, want 0", iv.Op("mix").Count())
	}
}

func TestRegisterPartRefusesWhatItCannotDerive(t *testing.T) {
	c := NewCollector(Config{Shards: 2})
	a, _ := c.Register("a")
	b, _ := c.Register("b")
	ax, err := c.RegisterPart(a, "a.x")
	if err != nil {
		t.Fatal(err)
	}
	if again, err := c.RegisterPart(a, "a.x"); err != nil || again != ax {
		t.Errorf("registering a part again = %v, %v; want %v, nil", again, err, ax)
	}
	for _, tt := range []struct {
		class Op
		name  string
		want  string
	}{
		{b, "a.x", "is a part of"},           // a part of another series
		{ax, "a.x.y", "a part has no parts"}, // a part's part
		{b, "a", "has parts of its own"},     // a series with parts
		{a, "a", "part of itself"},
		{Op(999), "z.y", "unknown series"},
		{a, "a.1 bad", "series name"}, // Register's own refusal
	} {
		if _, err := c.RegisterPart(tt.class, tt.name); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("RegisterPart(%d, %q) = %v, want an error saying %q", tt.class, tt.name, err, tt.want)
		}
	}
}

// Parts registered while the collector ticks and workers record: the race detector
// checks that the tick and Answered read a class's parts safely.
func TestRegisterPartWhileTicking(t *testing.T) {
	c := NewCollector(Config{Shards: 2})
	class, _ := c.Register("mix")
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		now := time.Now()
		for {
			select {
			case <-stop:
				return
			default:
			}
			now = now.Add(time.Second)
			c.Tick(now)
			_ = c.Recorder(class).Answered()
		}
	}()
	var total int64
	for i := range 20 {
		op, err := c.RegisterPart(class, fmt.Sprintf("mix.op%d", i))
		if err != nil {
			t.Fatal(err)
		}
		c.Recorder(op).Shard(i).Success(time.Millisecond, time.Millisecond)
		total++
	}
	close(stop)
	wg.Wait()
	c.Tick(time.Now().Add(time.Hour))
	if got := c.CumulativeCounts(class).Successes; got != total {
		t.Errorf("class counted %d successes, want %d", got, total)
	}
}

// The cumulative histograms are brought up to date when read (settleCum), not at each
// tick: a collector read only at the end of a run reports what one read after every
// tick does, and a reset drops what was pending.
func TestCumulativeReadLateEqualsReadEachTick(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	clkA, clkB := clock.NewSim(t0), clock.NewSim(t0)
	a, b := NewCollector(Config{Shards: 4, Clock: clkA}), NewCollector(Config{Shards: 4, Clock: clkB})
	resp, svc := secondValues(5000)
	for tick := range 4 {
		for _, c := range []*Collector{a, b} {
			for i := range resp {
				c.Recorder(OpRead).Shard(i).Success(resp[(i+tick*777)%len(resp)], svc[(i+tick*777)%len(svc)])
			}
			if tick == 2 {
				c.Recorder(OpWrite).Shard(0).Drop(time.Duration(tick) * time.Millisecond)
			}
		}
		clkA.Advance(time.Second)
		clkB.Advance(time.Second)
		a.Tick(clkA.Now())
		b.Tick(clkB.Now())
		_ = a.Cumulative() // a settles at every tick, b only at the end
	}
	got, want := b.Cumulative(), a.Cumulative()
	if !reflect.DeepEqual(got.Ops, want.Ops) {
		t.Errorf("cumulative read late:\n%+v\nread each tick:\n%+v", got.Ops, want.Ops)
	}
	ra, sa := a.CumulativeHistograms(OpRead)
	rb, sb := b.CumulativeHistograms(OpRead)
	if l := LatencyOf(rb); got.Ops["read"].ResponseTime != l {
		t.Errorf("cumulative response time read late %+v, want its histogram's %+v", got.Ops["read"].ResponseTime, l)
	}
	if !ra.Equals(rb) || !sa.Equals(sb) || ra.TotalCount() != 4*int64(len(resp)) {
		t.Errorf("cumulative histograms: %d, %d values read late, %d, %d each tick", rb.TotalCount(), sb.TotalCount(), ra.TotalCount(), sa.TotalCount())
	}
	// What a reset discards is not settled into the next span.
	b.Recorder(OpRead).Shard(0).Success(time.Millisecond, time.Millisecond)
	clkB.Advance(time.Second)
	b.Tick(clkB.Now())
	b.Reset()
	if r, _ := b.CumulativeHistograms(OpRead); r.TotalCount() != 0 {
		t.Errorf("after a reset the cumulative histogram holds %d values", r.TotalCount())
	}
}
