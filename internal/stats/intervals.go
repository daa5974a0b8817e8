package stats

import (
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ndbench/ndbench/driver"
)

// EncodedInterval is one tick's measurements in a form that crosses a network: counters
// and the HdrHistogram V2 (compressed, base64) encodings of the interval's histograms.
// Intervals are the unit of exchange between nodes: percentiles cannot be merged, the
// histograms they come from can, exactly.
type EncodedInterval struct {
	// Seq numbers intervals from 0 in tick order, without gaps, for the life of the
	// collector; a reader asks for the ones from its last Seq + 1.
	Seq   uint64    `json:"seq"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Due is when the tick that ended the interval was due on the node's schedule
	// (Interval.Due): a coordinator places the interval in the second that ends there,
	// so a late tick lands in its own second. Absent from nodes that predate it, and on
	// an interval closed by a collector without a schedule; a coordinator then places
	// the interval by End.
	Due time.Time `json:"due,omitzero"`
	// SpanStart is the start of the cumulative span the interval counts in: it changes at
	// a stats reset (a new driver session, a new phase), and merging every interval of one
	// SpanStart gives exactly that span's cumulative histograms and counters.
	SpanStart time.Time `json:"spanStart"`
	// Ops has every series (op class, or operation of a class) by name.
	Ops map[string]EncodedOp `json:"ops"`
	// Nodes, Partial and Missing carry a fleet interval's completeness (see Interval),
	// so a coordinator's encoded intervals say which seconds lack some node's data;
	// absent on a node's own.
	Nodes   int      `json:"nodes,omitempty"`
	Partial bool     `json:"partial,omitempty"`
	Missing []string `json:"missing,omitempty"`
}

// EncodedOp is one series' share of an EncodedInterval.
type EncodedOp struct {
	Successes  int64            `json:"successes"`
	Misses     int64            `json:"misses"`
	Failures   map[string]int64 `json:"failures"`
	Validation map[string]int64 `json:"validation"`
	Clamped    int64            `json:"clamped"`
	// Dropped and DropLateness (a V2 encoding, "" when none) are the operations skipped
	// under workload.catchUp=drop; absent from nodes that never drop.
	Dropped      int64  `json:"dropped,omitempty"`
	DropLateness string `json:"dropLateness,omitempty"`
	// LagOwnUs and LagWaitUs split the start lag (Counts.LagOwnUs); absent from nodes
	// that predate the split, which decode as 0: not known.
	LagOwnUs   int64   `json:"lagOwnUs,omitempty"`
	LagWaitUs  int64   `json:"lagWaitUs,omitempty"`
	TargetRate float64 `json:"targetRate"`
	Workers    int     `json:"workers"`
	BacklogMs  float64 `json:"backlogMs"`
	Pending    int64   `json:"pending"`
	// Response, Service and StartLag are V2-encoded histograms of microseconds; "" when
	// nothing was recorded.
	Response string `json:"response"`
	Service  string `json:"service"`
	StartLag string `json:"startLag"`
}

// EncodeInterval encodes iv as interval seq of the span that started at spanStart.
func EncodeInterval(iv *Interval, seq uint64, spanStart time.Time) (EncodedInterval, error) {
	e := EncodedInterval{Seq: seq, Start: iv.Start, End: iv.End, Due: iv.Due, SpanStart: spanStart, Ops: make(map[string]EncodedOp, len(iv.Ops)),
		Nodes: iv.Nodes, Partial: iv.Partial, Missing: slices.Clone(iv.Missing)}
	for i := range iv.Ops {
		o := &iv.Ops[i]
		eo := EncodedOp{
			Successes: o.Successes, Misses: o.Misses, Clamped: o.Clamped, Dropped: o.Dropped,
			LagOwnUs: o.LagOwnUs, LagWaitUs: o.LagWaitUs,
			Failures: make(map[string]int64, driver.NumClasses), Validation: make(map[string]int64, NumValidations),
			TargetRate: o.TargetRate, Workers: o.Workers, BacklogMs: o.Backlog.Seconds() * 1000, Pending: o.Pending,
		}
		for _, c := range driver.Classes {
			eo.Failures[c.String()] = o.Failures[c]
		}
		for _, v := range Validations {
			eo.Validation[v.String()] = o.Validation[v]
		}
		for _, h := range []struct {
			src *hdrhistogram.Histogram
			dst *string
		}{{o.Response, &eo.Response}, {o.Service, &eo.Service}, {o.StartLag, &eo.StartLag}, {o.Late, &eo.DropLateness}} {
			if h.src == nil || h.src.TotalCount() == 0 {
				continue
			}
			b, err := EncodeHistogram(h.src)
			if err != nil {
				return EncodedInterval{}, fmt.Errorf("encode %s interval %d: %w", o.Name, seq, err)
			}
			*h.dst = string(b)
		}
		e.Ops[o.Name] = eo
	}
	return e, nil
}

// Decode turns e back into an Interval with histograms of the package geometry (empty
// ones where nothing was recorded), ready to merge: one entry per series, sorted by name
// (merge intervals by Name, not by position: another node may have registered its
// series in another order). A name that cannot name a series is an error, and so are
// more than MaxSeries series (no node has more, and each costs four histograms here).
func (e *EncodedInterval) Decode() (*Interval, error) {
	if len(e.Ops) > MaxSeries {
		return nil, fmt.Errorf("decode interval %d: %d series, more than the %d a node has at most", e.Seq, len(e.Ops), MaxSeries)
	}
	iv := &Interval{Start: e.Start, End: e.End, Due: e.Due, Ops: make([]OpInterval, 0, len(e.Ops)),
		Nodes: e.Nodes, Partial: e.Partial, Missing: slices.Clone(e.Missing)}
	names := make([]string, 0, len(e.Ops))
	for name := range e.Ops {
		if err := CheckSeriesName(name); err != nil {
			return nil, fmt.Errorf("decode interval %d: %w", e.Seq, err)
		}
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		eo := e.Ops[name]
		iv.Ops = append(iv.Ops, OpInterval{Name: name, Response: NewHistogram(), Service: NewHistogram(), StartLag: NewLagHistogram(), Late: NewLagHistogram()})
		o := &iv.Ops[len(iv.Ops)-1]
		o.Successes, o.Misses, o.Clamped, o.Dropped = eo.Successes, eo.Misses, eo.Clamped, eo.Dropped
		o.LagOwnUs, o.LagWaitUs = eo.LagOwnUs, eo.LagWaitUs
		for _, c := range driver.Classes {
			o.Failures[c] = eo.Failures[c.String()]
		}
		for _, v := range Validations {
			o.Validation[v] = eo.Validation[v.String()]
		}
		o.TargetRate, o.Workers, o.Pending = eo.TargetRate, eo.Workers, eo.Pending
		o.Backlog = time.Duration(eo.BacklogMs * float64(time.Millisecond))
		for _, h := range []struct {
			src string
			dst *hdrhistogram.Histogram
		}{{eo.Response, o.Response}, {eo.Service, o.Service}, {eo.StartLag, o.StartLag}, {eo.DropLateness, o.Late}} {
			if h.src == "" {
				continue
			}
			d, err := DecodeHistogram([]byte(h.src))
			if err != nil {
				return nil, fmt.Errorf("decode %s interval %d: %w", name, e.Seq, err)
			}
			if dropped := MergeHistograms(h.dst, d); dropped != 0 {
				return nil, fmt.Errorf("decode %s interval %d: %d values outside the histogram range", name, e.Seq, dropped)
			}
		}
	}
	return iv, nil
}

// IntervalLog keeps a collector's most recent intervals encoded, for readers that merge
// them (a fleet coordinator, an exporter): Since(seq) resumes where a reader left off
// without gaps or duplicates while the intervals are still held.
//
// Encoding costs: HdrHistogram V2 encoding of a second of reads and writes takes ~4 ms and
// allocates ~5 MB (hdrhistogram-go builds the full counts dump and a new zlib writer per
// histogram; BenchmarkEncodeInterval). A node nobody reads from should not pay that
// forever, so with an idle time set the log encodes only while a reader has asked within
// it; a reader's first call starts it (and reports what it missed).
//
// An interval the collector amends after it was published (Collector.MarkMissing: a
// fleet second flagged partial when a node's data for it came late) is amended in the
// log too, and a reader that had it gets it again (IntervalsPage.Amended).
type IntervalLog struct {
	coll   *Collector
	cancel []func()
	idle   time.Duration // 0: always encode
	now    func() time.Time

	mu       sync.Mutex
	active   bool
	lastRead time.Time
	ring     []EncodedInterval
	// amended is, beside each interval of ring, 1 + next when it was last amended, 0
	// if it never was: a reader that asked for an interval from next on has not seen it.
	amended []uint64
	head    int    // index of the oldest once the ring is full
	next    uint64 // Seq of the next interval
	err     error  // the last encoding error, if any
	bytes   int    // encoded size held, for memory accounting
}

// NewIntervalLog starts keeping the last n intervals of c (n ≥ 1). With idle > 0 it
// encodes only while a reader has called Since within idle. Close stops it.
func NewIntervalLog(c *Collector, n int, idle time.Duration) *IntervalLog {
	l := &IntervalLog{coll: c, ring: make([]EncodedInterval, 0, max(n, 1)), amended: make([]uint64, 0, max(n, 1)),
		idle: idle, now: time.Now, active: idle == 0}
	l.cancel = []func(){c.Subscribe(l.add), c.SubscribeAmended(l.amend)}
	return l
}

// Close stops recording new intervals and amendments; those held stay readable.
func (l *IntervalLog) Close() {
	for _, f := range l.cancel {
		f()
	}
}

// amend gives the held interval that ended at p's time p's completeness: the collector
// flagged it partial after it was published.
func (l *IntervalLog) amend(p Point) {
	l.mu.Lock()
	defer l.mu.Unlock()
	at := p.Time.UnixNano()
	for i := range l.ring {
		if l.ring[i].End.UnixNano() != at {
			continue
		}
		// A new slice, not the old one changed: pages handed out share it.
		l.ring[i].Partial, l.ring[i].Missing = p.Partial, slices.Clone(p.Missing)
		l.amended[i] = l.next + 1
	}
}

// add encodes one tick. It runs on the collector's tick goroutine, about once a second.
func (l *IntervalLog) add(iv *Interval) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.active && l.idle > 0 && l.now().Sub(l.lastRead) > l.idle {
		l.active = false
		l.ring, l.amended, l.head, l.bytes = l.ring[:0], l.amended[:0], 0, 0
	}
	if !l.active {
		l.next++ // the sequence runs on, so a returning reader learns what it missed
		return
	}
	e, err := EncodeInterval(iv, l.next, l.coll.SpanStart())
	if err != nil {
		// Keep the sequence gapless: a reader sees an interval without histograms rather
		// than a hole it cannot explain; the error is reported by Since.
		l.err = err
		e = EncodedInterval{Seq: l.next, Start: iv.Start, End: iv.End, Due: iv.Due, SpanStart: l.coll.SpanStart(),
			Nodes: iv.Nodes, Partial: iv.Partial, Missing: slices.Clone(iv.Missing)}
	}
	l.next++
	size := encodedSize(&e)
	if len(l.ring) < cap(l.ring) {
		l.ring, l.amended = append(l.ring, e), append(l.amended, 0)
	} else {
		l.bytes -= encodedSize(&l.ring[l.head])
		l.ring[l.head], l.amended[l.head] = e, 0
		l.head = (l.head + 1) % len(l.ring)
	}
	l.bytes += size
}

func encodedSize(e *EncodedInterval) int {
	n := 0
	for _, o := range e.Ops {
		n += len(o.Response) + len(o.Service) + len(o.StartLag)
	}
	return n
}

// IntervalsPage is what Since returns.
type IntervalsPage struct {
	// Intervals are those with Seq ≥ the requested one that are still held, oldest first.
	Intervals []EncodedInterval `json:"intervals"`
	// Amended are the intervals before the requested Seq amended since a reader that
	// asked for that Seq got them (Collector.MarkMissing: a fleet second flagged partial
	// after it was published), as they are now, oldest first; a reader replaces those
	// it holds. A reader may get one more than once, never misses one while it is held.
	Amended []EncodedInterval `json:"amended,omitempty"`
	// Next is the Seq to ask for next time.
	Next uint64 `json:"next"`
	// Missed counts requested intervals no longer held (the reader fell behind the ring):
	// a merge over them is partial, and the reader must say so.
	Missed uint64 `json:"missed"`
	// Error is the last encoding failure, if any ("" normally).
	Error string `json:"error,omitempty"`
}

// Since returns the intervals from seq on.
func (l *IntervalLog) Since(seq uint64) IntervalsPage {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lastRead, l.active = l.now(), true
	p := IntervalsPage{Next: l.next, Intervals: []EncodedInterval{}}
	if l.err != nil {
		p.Error = l.err.Error()
	}
	oldest := l.next - uint64(len(l.ring))
	for s := oldest; s < min(seq, l.next); s++ {
		i := (l.head + int(s-oldest)) % len(l.ring)
		if a := l.amended[i]; a != 0 && a-1 >= seq {
			p.Amended = append(p.Amended, l.ring[i])
		}
	}
	if seq < oldest {
		p.Missed = oldest - seq
		seq = oldest
	}
	for s := seq; s < l.next; s++ {
		i := (l.head + int(s-oldest)) % len(l.ring)
		p.Intervals = append(p.Intervals, l.ring[i])
	}
	return p
}

// HeldBytes returns the size of the encoded histograms held.
func (l *IntervalLog) HeldBytes() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.bytes
}
