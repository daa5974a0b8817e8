package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/ndbench/ndbench/internal/stats"
)

// streamBuffer is how many intervals a slow client may fall behind before it misses
// some: the tick goroutine never waits for a client.
const streamBuffer = 8

// hub fans each interval's summary, and each amended point of the series, out to the
// open event streams.
type hub struct {
	mu      sync.Mutex
	clients map[chan hubEvent]struct{}
	done    chan struct{}
	closed  bool
}

// hubEvent is one event for the streams: an interval's summary, or an amended point.
type hubEvent struct {
	amend bool
	data  []byte
}

func newHub() *hub {
	return &hub{clients: map[chan hubEvent]struct{}{}, done: make(chan struct{})}
}

// publish encodes the summary once and offers it to every client without blocking.
func (h *hub) publish(sum stats.Summary) {
	h.send(false, sum)
}

// publishAmend offers every client the series point p, amended after it was published
// (stats.Collector.MarkMissing), without blocking: a client that holds the point, from
// the series or from the interval event of its second, replaces it.
func (h *hub) publishAmend(p stats.Point) {
	h.send(true, p)
}

func (h *hub) send(amend bool, v any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.clients) == 0 {
		return
	}
	data, err := json.Marshal(v)
	if err != nil {
		return // a Summary or a Point is plain data; this cannot fail
	}
	for c := range h.clients {
		select {
		case c <- hubEvent{amend: amend, data: data}:
		default: // slow client: it misses this event
		}
	}
}

func (h *hub) subscribe() (chan hubEvent, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, false
	}
	c := make(chan hubEvent, streamBuffer)
	h.clients[c] = struct{}{}
	return c, true
}

func (h *hub) unsubscribe(c chan hubEvent) {
	h.mu.Lock()
	delete(h.clients, c)
	h.mu.Unlock()
}

// close ends every stream (server shutdown), idempotently.
func (h *hub) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.closed {
		h.closed = true
		close(h.done)
	}
}

// CumulativeEvent is the data of the stream's `cumulative` event: GET /api/v1/stats
// without the latest interval (the `interval` event carries that).
type CumulativeEvent struct {
	Cumulative stats.Summary                   `json:"cumulative"`
	Errors     map[string][]stats.ErrorMessage `json:"errors"`
}

// streamRoute serves GET /api/v1/stats/stream and documents it: huma's handlers return
// one response, an event stream is written as it goes, so it is a plain handler.
func (s *Server) streamRoute() {
	schema := s.api.OpenAPI().Components.Schemas.Schema(reflectProblem, true, "Problem")
	sumSchema := s.api.OpenAPI().Components.Schemas.Schema(reflectSummary, true, "Summary")
	s.api.OpenAPI().AddOperation(&huma.Operation{
		OperationID: "stream-stats", Method: http.MethodGet, Path: "/api/v1/stats/stream", Tags: []string{"stats"},
		Summary: "Live statistics as Server-Sent Events",
		Description: "One `interval` event per second whose data is the interval summary (JSON, as `latest` in GET /api/v1/stats); " +
			"comment lines as heartbeats. A client that reads too slowly misses intervals rather than slowing the server. " +
			"An `amend` event re-sends a point of the series that changed after it was published (a fleet second flagged " +
			"partial when a node's data for it came late), its data as a point of GET /api/v1/stats/series (`t` is the " +
			"interval's end, as `end` in the interval event): a client replaces the point it holds at that `t`. " +
			"With `intervals=1`, also one `encoded` event per interval whose data is that interval encoded for merging " +
			"(as an element of GET /api/v1/stats/intervals: seq, counters, HdrHistogram V2 histograms), from `since` " +
			"(a sequence number; default: the next interval) on, without gaps: intervals the node no longer holds are " +
			"announced by a `missed` event with their count, so a merger knows its result is partial; an interval amended " +
			"after it was sent comes again as an `amended` event (as `amended` in GET /api/v1/stats/intervals). " +
			"With `cumulative=1`, also one `cumulative` event when the stream opens and after each interval whose data is " +
			"`cumulative` and `errors` as in GET /api/v1/stats (the session totals and the recent failure messages), " +
			"so a live numbers table needs no polling.",
		Security: []map[string][]string{{"bearer": {}}},
		Responses: map[string]*huma.Response{
			"200": {Description: "Event stream", Content: map[string]*huma.MediaType{"text/event-stream": {Schema: sumSchema}}},
			"401": {Description: http.StatusText(http.StatusUnauthorized), Content: map[string]*huma.MediaType{"application/problem+json": {Schema: schema}}},
			"503": {Description: "Server shutting down", Content: map[string]*huma.MediaType{"application/problem+json": {Schema: schema}}},
		},
	})
	s.handle(readOnly, "GET /api/v1/stats/stream", http.HandlerFunc(s.stream))
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request) {
	c, ok := s.hub.subscribe()
	if !ok {
		writeProblem(w, http.StatusServiceUnavailable, "server is shutting down")
		return
	}
	defer s.hub.unsubscribe(c)
	rc := http.NewResponseController(w)
	// The server's write timeout is for ordinary responses; a stream lives as long as its
	// client does.
	_ = rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	if _, err := fmt.Fprint(w, ": ndbench stats stream\nretry: 2000\n\n"); err != nil {
		return
	}
	if rc.Flush() != nil {
		return
	}
	// With intervals=1 the stream also carries the encoded intervals, in sequence order,
	// read from the node's interval log after each tick (the log may hold an interval one
	// tick after its summary went out; the sequence number keeps the reader gapless).
	encoded := r.URL.Query().Get("intervals") == "1"
	var next uint64
	if encoded {
		page := s.inst.Intervals(^uint64(0)) // starts the log encoding; tells the next seq
		next = page.Next
		if v := r.URL.Query().Get("since"); v != "" {
			if n, err := strconv.ParseUint(v, 10, 64); err == nil && n < next {
				next = n
			}
		}
	}
	sendEncoded := func() error {
		page := s.inst.Intervals(next)
		if page.Missed > 0 {
			if _, err := fmt.Fprintf(w, "event: missed\ndata: {\"missed\":%d}\n\n", page.Missed); err != nil {
				return err
			}
		}
		for _, iv := range page.Amended {
			b, err := json.Marshal(iv)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(w, "event: amended\ndata: %s\n\n", b); err != nil {
				return err
			}
		}
		for _, iv := range page.Intervals {
			b, err := json.Marshal(iv)
			if err != nil {
				return err
			}
			if _, err := fmt.Fprintf(w, "event: encoded\nid: %d\ndata: %s\n\n", iv.Seq, b); err != nil {
				return err
			}
		}
		next = page.Next
		return nil
	}
	if encoded {
		if err := sendEncoded(); err != nil || rc.Flush() != nil {
			return
		}
	}
	// With cumulative=1 the session totals follow each interval. They are computed here,
	// on the client's goroutine, not on the tick goroutine that must never wait; one
	// client that asks costs one cumulative view per second.
	cumulative := r.URL.Query().Get("cumulative") == "1"
	sendCumulative := func() error {
		c := s.inst.Collector()
		b, err := json.Marshal(CumulativeEvent{Cumulative: c.Cumulative(), Errors: c.Errors()})
		if err != nil {
			return fmt.Errorf("encoding the cumulative event: %w", err)
		}
		_, err = fmt.Fprintf(w, "event: cumulative\ndata: %s\n\n", b)
		return err
	}
	if cumulative {
		if err := sendCumulative(); err != nil || rc.Flush() != nil {
			return
		}
	}
	beat := time.NewTicker(s.opts.Heartbeat)
	defer beat.Stop()
	for {
		var err error
		select {
		case <-r.Context().Done():
			return
		case <-s.hub.done:
			return
		case <-beat.C:
			_, err = fmt.Fprint(w, ": heartbeat\n\n")
		case ev := <-c:
			if ev.amend {
				_, err = fmt.Fprintf(w, "event: amend\ndata: %s\n\n", ev.data)
				break
			}
			_, err = fmt.Fprintf(w, "event: interval\ndata: %s\n\n", ev.data)
			if err == nil && encoded {
				err = sendEncoded()
			}
			if err == nil && cumulative {
				err = sendCumulative()
			}
		}
		if err == nil {
			err = rc.Flush()
		}
		if err != nil {
			return
		}
	}
}
