package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/ndbench/ndbench/internal/stats"
)

// The statistics' routes: the latest and cumulative figures, the time series, the
// histograms and 1 s intervals a fleet merges, and the reset.

// StatsBody is the latest interval and the cumulative view.
type StatsBody struct {
	Latest     stats.Summary `json:"latest" doc:"The last 1 s interval"`
	Cumulative stats.Summary `json:"cumulative" doc:"Since the driver was first initialized or the last reset"`
	// Errors explains the failures counted in Cumulative.
	Errors map[string][]stats.ErrorMessage `json:"errors" doc:"Per op class that failed in the cumulative span: the latest distinct failure messages, at most 10 per failure class, most recently seen first; credentials masked, cut at 200 bytes, runs of digits shown as N when messages differ only in them"`
}

// SeriesBody is the retained time series. GET /api/v1/stats/series writes it from the
// collector's encoded points (writeSeries); the type documents the response.
type SeriesBody struct {
	Points []stats.Point `json:"points" doc:"One point per interval, oldest first (at most an hour)"`
	More   bool          `json:"more,omitempty" doc:"With limit: points after the last one were left out; ask again with since set to its t"`
}

// OpHistograms are one op class's cumulative histograms.
type OpHistograms struct {
	Count        int64  `json:"count" doc:"Values recorded"`
	ResponseTime []byte `json:"responseTime" doc:"Response time histogram (from intended start), base64 of HdrHistogram V2 compressed encoding"`
	ServiceTime  []byte `json:"serviceTime" doc:"Service time histogram (from actual start), same encoding"`
}

// HistogramsBody carries cumulative histograms for cluster aggregation.
type HistogramsBody struct {
	Unit     string                  `json:"unit" example:"microseconds"`
	Encoding string                  `json:"encoding" example:"HdrHistogram V2 compressed, base64"`
	Start    time.Time               `json:"start" doc:"Start of the cumulative span"`
	End      time.Time               `json:"end" doc:"End of the last interval in it"`
	Ops      map[string]OpHistograms `json:"ops"`
}

func (s *Server) getStats(context.Context, *empty) (*out[StatsBody], error) {
	c := s.inst.Collector()
	return &out[StatsBody]{StatsBody{Latest: c.Latest(), Cumulative: c.Cumulative(), Errors: c.Errors()}}, nil
}

// seriesOut is GET /api/v1/stats/series' response: a body written by the handler.
type seriesOut struct {
	Body func(huma.Context)
}

// seriesResponses declares the 200 response of GET /api/v1/stats/series, whose body is a
// SeriesBody that huma does not see (seriesOut).
func (s *Server) seriesResponses() map[string]*huma.Response {
	schema := s.api.OpenAPI().Components.Schemas.Schema(reflect.TypeFor[SeriesBody](), true, "SeriesBody")
	return map[string]*huma.Response{"200": {Description: http.StatusText(http.StatusOK),
		Content: map[string]*huma.MediaType{"application/json": {Schema: schema}}}}
}

// getSeries answers from the collector's points encoded once each (stats.SeriesJSON),
// not by encoding the whole series per request: a page load asks for the whole hour,
// about 3 MB of JSON, and its encoding left several times that in garbage. The body is
// byte for byte what encoding a SeriesBody of SeriesSince(since) would give.
func (s *Server) getSeries(_ context.Context, in *struct {
	Since string `query:"since" doc:"RFC 3339 time, e.g. 2026-01-02T15:04:05Z"`
	Limit int    `query:"limit" minimum:"0" doc:"At most this many points, the oldest first (0: all); more says when points were left out"`
}) (*seriesOut, error) {
	var since time.Time
	if in.Since != "" {
		t, err := time.Parse(time.RFC3339Nano, in.Since)
		if err != nil {
			p := newProblem(http.StatusUnprocessableEntity, "since: want an RFC 3339 time such as 2026-01-02T15:04:05Z")
			p.Errors = []*huma.ErrorDetail{{Message: "invalid RFC 3339 time", Location: "query.since", Value: in.Since}}
			return nil, p
		}
		since = t
	}
	page, err := s.inst.Collector().SeriesJSON(since, in.Limit)
	if err != nil {
		return nil, fmt.Errorf("read the series: %w", err)
	}
	return &seriesOut{Body: func(ctx huma.Context) { s.writeSeries(ctx, page) }}, nil
}

// comma is the points' separator, a []byte so that writing it allocates nothing on a
// writer without WriteString.
var comma = []byte{','}

// writeSeries writes page as huma would write its SeriesBody: the negotiated content
// type, then the points joined into the document, ending with the encoder's newline.
func (s *Server) writeSeries(ctx huma.Context, page stats.SeriesPage) {
	ct, err := s.api.Negotiate(ctx.Header("Accept"))
	if err != nil {
		ct = "application/json" // the only format this API has; huma's fallback too
	}
	ctx.SetHeader("Content-Type", ct)
	ctx.SetStatus(http.StatusOK)
	// net/http buffers the writes; a client that went away ends the request, with no one
	// to tell, so write errors are dropped.
	w := ctx.BodyWriter()
	_, _ = io.WriteString(w, `{"points":[`)
	for i, p := range page.Points {
		if i > 0 {
			_, _ = w.Write(comma)
		}
		_, _ = w.Write(p)
	}
	end := "]}\n"
	if page.More {
		end = `],"more":true}` + "\n"
	}
	_, _ = io.WriteString(w, end)
}

func (s *Server) getHistograms(context.Context, *empty) (*out[HistogramsBody], error) {
	c := s.inst.Collector()
	cum := c.Cumulative()
	b := HistogramsBody{Unit: "microseconds", Encoding: "HdrHistogram V2 compressed, base64", Start: cum.Start, End: cum.End, Ops: map[string]OpHistograms{}}
	for i, name := range c.Names() {
		resp, svc := c.CumulativeHistograms(stats.Op(i))
		re, err := stats.EncodeHistogram(resp)
		if err != nil {
			return nil, fmt.Errorf("encode %s histogram: %w", name, err)
		}
		se, err := stats.EncodeHistogram(svc)
		if err != nil {
			return nil, fmt.Errorf("encode %s histogram: %w", name, err)
		}
		b.Ops[name] = OpHistograms{Count: resp.TotalCount(), ResponseTime: re, ServiceTime: se}
	}
	return &out[HistogramsBody]{b}, nil
}

func (s *Server) getIntervals(_ context.Context, in *struct {
	Since uint64 `query:"since" doc:"sequence number of the first interval wanted (the previous answer's next)"`
}) (*out[stats.IntervalsPage], error) {
	return &out[stats.IntervalsPage]{s.inst.Intervals(in.Since)}, nil
}

func (s *Server) resetStats(context.Context, *empty) (*struct{}, error) {
	s.inst.Collector().Reset()
	return &struct{}{}, nil
}
