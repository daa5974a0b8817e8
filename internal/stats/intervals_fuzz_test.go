package stats

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// FuzzIntervalsPage feeds a coordinator's view of a peer's GET /api/v1/stats/intervals
// answer: JSON, then each interval decoded. An interval decodes or is refused whole; a
// decoded one has one series per name, sorted, with histograms of the package geometries;
// and encoding it again gives an interval that decodes to the same counts.
func FuzzIntervalsPage(f *testing.F) {
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	iv := &Interval{Start: start, End: start.Add(time.Second)}
	for _, name := range []string{"read", "write", "search.byTitle"} {
		o := OpInterval{Name: name, Response: NewHistogram(), Service: NewHistogram(), StartLag: NewLagHistogram(), Late: NewLagHistogram(), TargetRate: 100, Workers: 4}
		for _, v := range []int64{40, 1000, 3000} {
			_ = o.Response.RecordValue(v)
			_ = o.Service.RecordValue(v / 2)
			_ = o.StartLag.RecordValue(v / 2)
		}
		o.Successes = 3
		iv.Ops = append(iv.Ops, o)
	}
	e, err := EncodeInterval(iv, 7, iv.Start)
	if err != nil {
		f.Fatal(err)
	}
	page, err := json.Marshal(IntervalsPage{Intervals: []EncodedInterval{e}, Next: 8})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(page))
	f.Add(`{"intervals":[],"next":0,"missed":3}`)
	f.Add(`{"intervals":[{"seq":1,"ops":{"read":{"successes":1,"response":""}}}],"next":2}`)
	f.Add(`{"intervals":[{"seq":1,"ops":{"a b":{}}}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		var p IntervalsPage
		if json.Unmarshal([]byte(body), &p) != nil {
			return
		}
		for _, e := range p.Intervals {
			iv, err := e.Decode()
			if err != nil {
				if iv != nil {
					t.Fatalf("error %v with an interval", err)
				}
				continue
			}
			if len(iv.Ops) != len(e.Ops) || len(iv.Ops) > MaxSeries {
				t.Fatalf("%d series decoded from %d", len(iv.Ops), len(e.Ops))
			}
			for i, o := range iv.Ops {
				if i > 0 && iv.Ops[i-1].Name >= o.Name {
					t.Fatalf("series %q after %q", o.Name, iv.Ops[i-1].Name)
				}
				if o.Response.SignificantFigures() != SignificantDigits || o.StartLag.SignificantFigures() != LagSignificantDigits {
					t.Fatalf("series %q: histograms of %d and %d digits", o.Name, o.Response.SignificantFigures(), o.StartLag.SignificantFigures())
				}
			}
			again, err := EncodeInterval(iv, e.Seq, e.SpanStart)
			if err != nil {
				t.Fatalf("re-encoding an accepted interval: %v", err)
			}
			back, err := again.Decode()
			if err != nil {
				t.Fatalf("decoding a re-encoded interval: %v", err)
			}
			for i, o := range iv.Ops {
				b := back.Ops[i]
				if b.Name != o.Name || b.Successes != o.Successes || b.Failures != o.Failures ||
					b.Response.TotalCount() != o.Response.TotalCount() || b.Service.TotalCount() != o.Service.TotalCount() ||
					b.StartLag.TotalCount() != o.StartLag.TotalCount() || b.Late.TotalCount() != o.Late.TotalCount() {
					t.Fatalf("series %q changed in an encode/decode round trip", o.Name)
				}
			}
		}
	})
}

// TestDecodeIntervalBoundsSeries: each series of a decoded interval costs four histograms
// (~750 KB), and a series costs a peer a dozen bytes of JSON. A node has at most
// MaxSeries, so an interval claiming more is refused before any is built, whatever the
// claim.
func TestDecodeIntervalBoundsSeries(t *testing.T) {
	for _, n := range []int{MaxSeries + 1, 1000} {
		e := EncodedInterval{Seq: 3, Ops: map[string]EncodedOp{}}
		for i := range n {
			e.Ops[fmt.Sprintf("c%d", i)] = EncodedOp{}
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		iv, err := e.Decode()
		runtime.ReadMemStats(&after)
		if err == nil || iv != nil || !strings.Contains(err.Error(), fmt.Sprint(MaxSeries)) {
			t.Fatalf("%d series: %v, want an error naming the bound %d", n, err, MaxSeries)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
			t.Errorf("refusing %d series allocated %d KB", n, alloc>>10)
		}
	}
	e := EncodedInterval{Ops: map[string]EncodedOp{}}
	for i := range MaxSeries {
		e.Ops[fmt.Sprintf("c%d", i)] = EncodedOp{}
	}
	if _, err := e.Decode(); err != nil {
		t.Fatalf("%d series: %v", MaxSeries, err)
	}
}
