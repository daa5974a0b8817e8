package stats

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// encodedPoint is one point of the series in JSON, with what SeriesJSON filters and
// evicts it by.
type encodedPoint struct {
	seq uint64 // its place in the ring's history: Collector.pushed when it entered
	end int64  // pointRec.end, what since is compared with
	b   []byte
}

// SeriesPage is a run of the series' points, each in JSON.
type SeriesPage struct {
	// Points are the points, oldest first, each exactly as encoding/json writes that
	// Point with HTML escaping off, without a newline. The slices are shared by every
	// caller until the point leaves the series: read them, never modify them.
	Points [][]byte
	// More says the limit left out points that ended after the last of Points.
	More bool
}

// SeriesJSON returns the points SeriesSince(since) returns, encoded in JSON, the first
// limit of them (all for limit <= 0).
//
// A dashboard fetches the whole series (an hour of points, about 3 MB of JSON) at every
// page load, and one that reads the series often with SeriesSince re-encodes the hour
// each time: megabytes of garbage per request, which a long-lived server's RSS pays for.
// Here each point is encoded once, by the first call after it entered the series, and
// kept until it leaves the series, so a call costs a copy of what it returns and the
// encoding of the points no call has asked for yet. The cache holds at most the
// series' length of points, and only from the first call on: about 2 KB a point for a
// node's built-in classes, 7 MB for a full hour (the series itself is about 2.6 MB).
func (c *Collector) SeriesJSON(since time.Time, limit int) (SeriesPage, error) {
	after := int64(math.MinInt64)
	if !since.IsZero() {
		after = since.UnixNano()
	}
	c.encMu.Lock()
	defer c.encMu.Unlock()
	if err := c.encodeNew(); err != nil {
		return SeriesPage{}, err
	}
	n := 0
	for i := range c.enc {
		if c.enc[i].end > after {
			n++
		}
	}
	var page SeriesPage
	if limit > 0 && n > limit {
		n, page.More = limit, true
	}
	page.Points = make([][]byte, 0, n)
	for i := range c.enc {
		if len(page.Points) == n {
			break
		}
		if c.enc[i].end > after {
			page.Points = append(page.Points, c.enc[i].b)
		}
	}
	return page, nil
}

// encodeNew brings enc in line with the ring: it drops the points that left it and
// encodes those that entered it since the last call. The points are copied out under
// mu and encoded after it is released, so ticks do not wait for the encoding. The
// caller holds encMu.
func (c *Collector) encodeNew() error {
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
	list := c.list()
	c.mu.RUnlock()

	drop := 0
	for drop < len(c.enc) && c.enc[drop].seq < oldest {
		drop++
	}
	// Cleared, so the dropped points' bytes are freed before append moves the rest.
	clear(c.enc[:drop])
	c.enc = c.enc[drop:]
	if len(recs) == 0 {
		return nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // as the API's encoder writes it
	for i := range recs {
		buf.Reset()
		if err := enc.Encode(recs[i].point(list)); err != nil {
			return fmt.Errorf("encode the series point ending %v: %w", time.Unix(0, recs[i].end), err)
		}
		c.enc = append(c.enc, encodedPoint{seq: from + uint64(i), end: recs[i].end,
			b: bytes.Clone(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))})
	}
	return nil
}
