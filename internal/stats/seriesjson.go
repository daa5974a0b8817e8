package stats

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// SeriesJSONIdle is how long the series' encoded points are kept without a SeriesJSON
// call: a dashboard that was closed leaves up to an hour of them (about 7 MB) behind,
// and the next read after the drop encodes the series again (about 0.2 s for an hour).
const SeriesJSONIdle = 2 * time.Minute

// encodedPoint is one point of the series in JSON, with what SeriesJSON filters and
// evicts it by.
type encodedPoint struct {
	seq uint64 // its place in the ring's history: Collector.pushed when it entered
	end int64  // pointRec.end, what since is compared with
	// rev and amended are the point's fleetMark.rev and .amended when it was encoded:
	// an amended point is returned to pollers that read it before (updatedAfter).
	rev     uint64
	amended int64
	b       []byte
}

// updatedAfter is pointRec.updatedAfter for the encoded point.
func (e *encodedPoint) updatedAfter(after int64) bool {
	return e.end > after || e.rev != 0 && e.amended >= after
}

// SeriesPage is a run of the series' points, each in JSON.
type SeriesPage struct {
	// Points are the points, oldest first, each exactly as encoding/json writes that
	// Point with HTML escaping off, without a newline. The slices are shared by every
	// caller until the point leaves the series or is amended: read them, never modify
	// them.
	Points [][]byte
	// More says the limit left out points that ended after the last of Points.
	More bool
}

// SeriesJSON returns the points SeriesUpdatedSince(since) returns, encoded in JSON:
// those amended since a poller read them (which came first, being older) and the first
// limit of the points that ended after since (all for limit <= 0). The limit pages the
// new points only, so a page's last point is a new one, the next page's since.
//
// A dashboard fetches the whole series (an hour of points, about 3 MB of JSON) at every
// page load, and one that reads the series often with SeriesSince re-encodes the hour
// each time: megabytes of garbage per request, which a long-lived server's RSS pays for.
// Here each point is encoded once, by the first call after it entered the series (or
// was amended), and kept until it leaves the series, so a call costs a copy of what it
// returns and the encoding of the points no call has asked for yet. The cache holds at
// most the series' length of points, about 2 KB a point for a node's built-in classes,
// 7 MB for a full hour (the series itself is about 2.6 MB), and only while the series is
// read: a tick drops it when no call came for SeriesJSONIdle.
func (c *Collector) SeriesJSON(since time.Time, limit int) (SeriesPage, error) {
	after := int64(math.MinInt64)
	if !since.IsZero() {
		after = since.UnixNano()
	}
	c.encMu.Lock()
	defer c.encMu.Unlock()
	c.encRead.Store(c.cfg.Clock.Now().UnixNano())
	if err := c.encodeNew(); err != nil {
		return SeriesPage{}, err
	}
	n, k := 0, 0 // the points that ended after since, and those amended before it
	for i := range c.enc {
		switch {
		case c.enc[i].end > after:
			n++
		case c.encAmended > 0 && c.enc[i].updatedAfter(after):
			k++
		}
	}
	var page SeriesPage
	if limit > 0 && n > limit {
		n, page.More = limit, true
	}
	page.Points = make([][]byte, 0, n+k)
	for i := range c.enc {
		e := &c.enc[i]
		switch {
		case e.end > after:
			if n == 0 {
				return page, nil
			}
			n--
		case k == 0 || !e.updatedAfter(after):
			continue
		}
		page.Points = append(page.Points, e.b)
	}
	return page, nil
}

// dropIdleJSON drops the encoded points when no SeriesJSON call came for
// SeriesJSONIdle. It runs at every tick: two atomic loads while nothing is held; it
// never waits for a call that is encoding (that one is no idle reader).
func (c *Collector) dropIdleJSON() {
	idle := func() bool {
		return c.encHeld.Load() > 0 && c.cfg.Clock.Now().UnixNano()-c.encRead.Load() >= int64(SeriesJSONIdle)
	}
	if !idle() || !c.encMu.TryLock() {
		return
	}
	defer c.encMu.Unlock()
	if idle() {
		c.enc, c.encAmended = nil, 0 // the array too: it is the series' length of references
		c.encHeld.Store(0)
	}
}

// encodeNew brings enc in line with the ring: it drops the points that left it, encodes
// those that entered it since the last call and encodes again those amended since. The
// points are copied out under mu and encoded after it is released, so ticks do not wait
// for the encoding. The caller holds encMu.
func (c *Collector) encodeNew() error {
	defer func() { c.encHeld.Store(int64(len(c.enc))) }()
	c.mu.RLock()
	n, pushed := len(c.ring), c.pushed
	oldest := pushed - uint64(n) + 1 // the sequence number of the ring's oldest point
	from := oldest
	if k := len(c.enc); k > 0 {
		from = max(from, c.enc[k-1].seq+1)
	}
	recs := make([]pointRec, 0, pushed+1-from)
	for seq := from; seq <= pushed; seq++ {
		recs = append(recs, c.ring[(c.head+int(seq-oldest))%n])
	}
	// The points amended since the last call, among those encoded and still in the ring.
	var again []pointRec
	var againSeq []uint64
	if c.amendRev != c.encRev {
		for i := range c.enc {
			seq := c.enc[i].seq
			if seq < oldest {
				continue
			}
			p := c.ring[(c.head+int(seq-oldest))%n]
			if p.fleet != nil && p.fleet.rev > c.encRev {
				again, againSeq = append(again, p), append(againSeq, seq)
			}
		}
		c.encRev = c.amendRev
	}
	list := c.list()
	c.mu.RUnlock()

	drop := 0
	for drop < len(c.enc) && c.enc[drop].seq < oldest {
		drop++
	}
	for i := range c.enc[:drop] {
		if c.enc[i].rev != 0 {
			c.encAmended--
		}
	}
	// Cleared, so the dropped points' bytes are freed before append moves the rest.
	clear(c.enc[:drop])
	c.enc = c.enc[drop:]
	if len(recs) == 0 && len(again) == 0 {
		return nil // and the encoder's buffer is not allocated
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // as the API's encoder writes it
	encode := func(seq uint64, p *pointRec) (encodedPoint, error) {
		buf.Reset()
		if err := enc.Encode(p.point(list)); err != nil {
			return encodedPoint{}, fmt.Errorf("encode the series point ending %v: %w", time.Unix(0, p.end), err)
		}
		e := encodedPoint{seq: seq, end: p.end, b: bytes.Clone(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))}
		if p.fleet != nil {
			e.rev, e.amended = p.fleet.rev, p.fleet.amended
		}
		return e, nil
	}
	for i := range again {
		// enc holds consecutive sequence numbers from its first on (encodeNew appends
		// them in order and drops from the front).
		e, err := encode(againSeq[i], &again[i])
		if err != nil {
			return err
		}
		old := &c.enc[againSeq[i]-c.enc[0].seq]
		if old.rev == 0 {
			c.encAmended++
		}
		*old = e
	}
	for i := range recs {
		e, err := encode(from+uint64(i), &recs[i])
		if err != nil {
			return err
		}
		if e.rev != 0 {
			c.encAmended++
		}
		c.enc = append(c.enc, e)
	}
	return nil
}
