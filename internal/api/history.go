package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/ndbench/ndbench/internal/history"
	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/web"
)

// HistorySource returns the results store the History routes read (docs/history.md). It
// may open the store on first use and is called per request, so a store that was down
// (PostgreSQL restarting) is reached again once it is back. The caller keeps ownership:
// the server never closes what it returns.
type HistorySource func(ctx context.Context) (history.Store, error)

// The History routes list at most this many runs: a page of a few years of nightly runs.
const (
	defaultHistoryRuns = 500
	maxHistoryRuns     = 10000
)

// HistoryQuery is the query every History route selects runs with.
type HistoryQuery struct {
	Tag      []string `query:"tag,explode" doc:"Only runs with this tag, KEY=VALUE (repeatable: all must match)"`
	Driver   string   `query:"driver" maxLength:"64" doc:"Only runs of this driver, e.g. redis"`
	Kind     string   `query:"kind" enum:"run,serve,scenario,autotune,fleet,import" doc:"Only runs recorded by this entry point"`
	Workload string   `query:"workload" maxLength:"256" doc:"Only runs of this workload (the preset's or scenario's name)"`
	Last     int      `query:"last" minimum:"0" maximum:"10000" doc:"Only the newest N selected runs (0: the newest 500)"`
}

func (q HistoryQuery) filter() (history.Filter, error) {
	tags, err := history.ParseTags(q.Tag)
	if err != nil {
		return history.Filter{}, newProblem(http.StatusUnprocessableEntity, "tag: "+err.Error())
	}
	limit := q.Last
	if limit == 0 {
		limit = defaultHistoryRuns
	}
	return history.Filter{Tags: tags, Driver: q.Driver, Kind: q.Kind, Workload: q.Workload, Limit: limit}, nil
}

// HistoryRun is one recorded run.
type HistoryRun struct {
	ID       int64             `json:"id"`
	Recorded time.Time         `json:"recorded"`
	Started  time.Time         `json:"started"`
	Ended    time.Time         `json:"ended"`
	Seconds  float64           `json:"seconds"`
	Kind     string            `json:"kind" doc:"What recorded it: run, serve, scenario, autotune, fleet or import"`
	Driver   string            `json:"driver"`
	Workload string            `json:"workload" doc:"The preset's or scenario's name; empty when the keys were given one by one"`
	Version  string            `json:"version" doc:"The ndbench version that measured it"`
	Host     HistoryHost       `json:"host"`
	Tags     map[string]string `json:"tags"`
	Source   string            `json:"source,omitempty" doc:"The file an imported run came from"`
	// Figures are set on a single run (GET /api/v1/history/runs/{id}).
	Figures []HistoryFigure `json:"figures,omitempty"`
}

// HistoryHost is the machine that ran the load generator.
type HistoryHost struct {
	Name string `json:"name"`
	OS   string `json:"os"`
	Arch string `json:"arch"`
	CPUs int    `json:"cpus"`
}

// HistoryFigure is one figure of a run.
type HistoryFigure struct {
	Figure  string `json:"figure" doc:"SERIES.METRIC, e.g. read.p99"`
	Series  string `json:"series"`
	Metric  string `json:"metric"`
	Unit    string `json:"unit"`
	WorseUp bool   `json:"worseUp" doc:"Whether a higher value is a regression (latency, errors) rather than a lower one (throughput)"`
	// Value is the run's value, on a run's figures; absent from the list of figures.
	Value *float64 `json:"value,omitempty"`
}

// HistoryRuns answers GET /api/v1/history/runs.
type HistoryRuns struct {
	Store string       `json:"store" doc:"Where the runs are kept (a PostgreSQL URL without its password)"`
	Runs  []HistoryRun `json:"runs" doc:"Oldest first"`
}

// HistoryTrend is one figure over the selected runs, with its change points and the
// verdict `ndbench history check` would give.
type HistoryTrend struct {
	Figure       string          `json:"figure"`
	Unit         string          `json:"unit"`
	WorseUp      bool            `json:"worseUp"`
	Points       []TrendPoint    `json:"points" doc:"Oldest first"`
	ChangePoints []TrendChange   `json:"changePoints"`
	Verdict      TrendVerdictOut `json:"verdict"`
}

// TrendPoint is one run's value of the figure.
type TrendPoint struct {
	RunID   int64             `json:"runId"`
	Started time.Time         `json:"started"`
	Tags    map[string]string `json:"tags"`
	Value   float64           `json:"value"`
}

// TrendChange is a change point: the run where the figure's distribution changed.
type TrendChange struct {
	Index     int       `json:"index" doc:"The first point of the new segment, in points"`
	RunID     int64     `json:"runId"`
	Started   time.Time `json:"started"`
	Before    float64   `json:"before" doc:"Mean of the segment before"`
	After     float64   `json:"after" doc:"Mean of the segment after"`
	Change    float64   `json:"change" doc:"(after-before)/before; 0 when before is 0"`
	P         float64   `json:"p" doc:"Permutation test p-value"`
	Direction string    `json:"direction" enum:"regression,improvement"`
}

// TrendVerdictOut is history check's verdict on the newest run.
type TrendVerdictOut struct {
	Status string `json:"status" enum:"pass,regression,not judged" doc:"regression: the newest run lies after a change point that made the figure worse, not undone since"`
	Detail string `json:"detail"`
	// Cause is the change point the regression started at (an index in changePoints), -1
	// when none.
	Cause int `json:"cause"`
}

type historyRunIn struct {
	ID int64 `path:"id" minimum:"1" doc:"The run's number in the store"`
}

type historyTrendIn struct {
	HistoryQuery
	Figure  string  `query:"figure" required:"true" minLength:"3" maxLength:"300" doc:"SERIES.METRIC, e.g. read.p99, write.rate, client.opsPerCPUSecond"`
	Alpha   float64 `query:"alpha" minimum:"0" exclusiveMaximum:"1" doc:"Significance of each change point (0: 0.01)"`
	MinSize int     `query:"minSize" minimum:"0" maximum:"1000" doc:"Fewest runs either side of a change point (0: 3; else at least 2)"`
}

// historyRoutes registers the read-only routes of the results store (the UI's History
// page). They only read: a run is recorded by the command that measured it.
func (s *Server) historyRoutes() {
	notFound := []int{http.StatusNotFound, http.StatusUnprocessableEntity, http.StatusBadGateway}
	register(s, readOnly, huma.Operation{OperationID: "list-history-runs", Method: http.MethodGet, Path: "/api/v1/history/runs", Tags: []string{"history"},
		Summary:     "Recorded runs",
		Description: "The runs of the results store (`--results` or `NDBENCH_RESULTS`; see docs/history.md), oldest first, with their tags. 404 when the service has no results store; 502 when it cannot be read."},
		notFound, func(ctx context.Context, in *HistoryQuery) (*out[HistoryRuns], error) {
			f, err := in.filter()
			if err != nil {
				return nil, err
			}
			st, name, err := s.history(ctx)
			if err != nil {
				return nil, err
			}
			runs, err := st.List(ctx, f)
			if err != nil {
				return nil, storeReadProblem(err)
			}
			res := HistoryRuns{Store: name, Runs: make([]HistoryRun, 0, len(runs))}
			for i := range runs {
				res.Runs = append(res.Runs, historyRun(&runs[i]))
			}
			return &out[HistoryRuns]{res}, nil
		})
	register(s, readOnly, huma.Operation{OperationID: "get-history-run", Method: http.MethodGet, Path: "/api/v1/history/runs/{id}", Tags: []string{"history"},
		Summary: "One recorded run with its figures"},
		notFound, func(ctx context.Context, in *historyRunIn) (*out[HistoryRun], error) {
			run, err := s.historyRun(ctx, in.ID)
			if err != nil {
				return nil, err
			}
			res := historyRun(run)
			res.Figures = []HistoryFigure{}
			for _, f := range sortedFigures(run.Figures) {
				hf := historyFigure(f)
				v := run.Figures[f]
				hf.Value = &v
				res.Figures = append(res.Figures, hf)
			}
			return &out[HistoryRun]{res}, nil
		})
	register(s, readOnly, huma.Operation{OperationID: "get-history-run-report", Method: http.MethodGet, Path: "/api/v1/history/runs/{id}/report", Tags: []string{"history"},
		Summary: "A recorded run's JSON report", Description: "The report as the run wrote it (secrets already redacted); feed two to `ndbench compare`."},
		notFound, func(ctx context.Context, in *historyRunIn) (*out[json.RawMessage], error) {
			run, err := s.historyRun(ctx, in.ID)
			if err != nil {
				return nil, err
			}
			return &out[json.RawMessage]{run.Report}, nil
		})
	register(s, readOnly, huma.Operation{OperationID: "get-history-run-report-html", Method: http.MethodGet, Path: "/api/v1/history/runs/{id}/report.html", Tags: []string{"history"},
		Summary: "A recorded run's report as a self-contained HTML page", Description: "Rendered from the recorded JSON report with the same charts as GET /api/v1/report.html; shown in the browser, in a sandbox (no access to this origin)."},
		notFound, func(ctx context.Context, in *historyRunIn) (*historyHTML, error) {
			run, err := s.historyRun(ctx, in.ID)
			if err != nil {
				return nil, err
			}
			var rep report.Report
			if err := json.Unmarshal(run.Report, &rep); err != nil || rep.FormatVersion == 0 {
				return nil, newProblem(http.StatusUnprocessableEntity, fmt.Sprintf("run %d has no report to render (recorded report: %.40s)", in.ID, run.Report))
			}
			var b bytes.Buffer
			if err := report.WriteHTML(&b, &rep, report.Charts(web.Charts())); err != nil {
				return nil, fmt.Errorf("render run %d's report: %w", in.ID, err)
			}
			// The page is rendered from stored data, which an import may have brought from
			// anywhere: a sandbox keeps its scripts (the charts) from this origin's API.
			return &historyHTML{ContentType: "text/html; charset=utf-8", CSP: "sandbox allow-scripts", Body: b.Bytes()}, nil
		})
	register(s, readOnly, huma.Operation{OperationID: "list-history-figures", Method: http.MethodGet, Path: "/api/v1/history/figures", Tags: []string{"history"},
		Summary: "The figures the selected runs have", Description: "What GET /api/v1/history/trend takes as figure."},
		notFound, func(ctx context.Context, in *HistoryQuery) (*out[[]HistoryFigure], error) {
			f, err := in.filter()
			if err != nil {
				return nil, err
			}
			st, _, err := s.history(ctx)
			if err != nil {
				return nil, err
			}
			figs, err := st.Figures(ctx, f)
			if err != nil {
				return nil, storeReadProblem(err)
			}
			res := make([]HistoryFigure, 0, len(figs))
			for _, fg := range figs {
				res = append(res, historyFigure(fg))
			}
			return &out[[]HistoryFigure]{res}, nil
		})
	register(s, readOnly, huma.Operation{OperationID: "get-history-trend", Method: http.MethodGet, Path: "/api/v1/history/trend", Tags: []string{"history"},
		Summary:     "A figure's trend with its change points",
		Description: "The figure in every selected run that has it, the change points E-divisive means finds in it (permutation test) and the verdict `ndbench history check` gives on the newest run. 422 names an unknown figure."},
		notFound, func(ctx context.Context, in *historyTrendIn) (*out[HistoryTrend], error) {
			fig, err := history.ParseFigure(in.Figure)
			if err != nil {
				return nil, newProblem(http.StatusUnprocessableEntity, "figure: "+err.Error())
			}
			f, err := in.filter()
			if err != nil {
				return nil, err
			}
			st, _, err := s.history(ctx)
			if err != nil {
				return nil, err
			}
			pts, err := st.Trend(ctx, f, fig)
			if err != nil {
				return nil, storeReadProblem(err)
			}
			return trendOf(fig, pts, history.ChangePointOptions{Alpha: in.Alpha, MinSize: in.MinSize})
		})
}

// historyHTML is a recorded run's HTML report.
type historyHTML struct {
	ContentType string `header:"Content-Type"`
	CSP         string `header:"Content-Security-Policy"`
	Body        []byte
}

func (s *Server) history(ctx context.Context) (history.Store, string, error) {
	if s.opts.History == nil {
		return nil, "", newProblem(http.StatusNotFound, "this service keeps no results history: start ndbench serve with --results PATH "+
			"(a SQLite file, or postgres://...) or set "+history.EnvResults+" (docs/history.md)")
	}
	st, err := s.opts.History(ctx)
	if err != nil {
		return nil, "", storeReadProblem(err)
	}
	return st, s.opts.HistoryName, nil
}

func (s *Server) historyRun(ctx context.Context, id int64) (*history.Run, error) {
	st, _, err := s.history(ctx)
	if err != nil {
		return nil, err
	}
	run, err := st.Get(ctx, id)
	if errors.Is(err, history.ErrNotFound) {
		return nil, newProblem(http.StatusNotFound, fmt.Sprintf("no recorded run %d", id))
	}
	if err != nil {
		return nil, storeReadProblem(err)
	}
	return run, nil
}

// storeReadProblem is a results store that could not be read: the store's failure, not
// the caller's or ndbench's.
func storeReadProblem(err error) error {
	return newProblem(http.StatusBadGateway, "results store: "+err.Error())
}

func historyRun(r *history.Run) HistoryRun {
	tags := r.Tags
	if tags == nil {
		tags = map[string]string{}
	}
	return HistoryRun{ID: r.ID, Recorded: r.Recorded, Started: r.Started, Ended: r.Ended, Seconds: r.Seconds, Kind: r.Kind,
		Driver: r.Driver, Workload: r.Workload, Version: r.Version, Tags: tags, Source: r.Source,
		Host: HistoryHost{Name: r.Host.Name, OS: r.Host.OS, Arch: r.Host.Arch, CPUs: r.Host.CPUs}}
}

func historyFigure(f history.Figure) HistoryFigure {
	return HistoryFigure{Figure: f.String(), Series: f.Series, Metric: f.Metric, Unit: f.Unit(), WorseUp: f.WorseUp()}
}

func sortedFigures(m map[history.Figure]float64) []history.Figure {
	figs := make([]history.Figure, 0, len(m))
	for f := range m {
		figs = append(figs, f)
	}
	// Series first, then the metrics in the order history lists them.
	order := map[string]int{}
	for i, n := range history.MetricNames() {
		order[n] = i
	}
	slices.SortFunc(figs, func(a, b history.Figure) int {
		if c := strings.Compare(a.Series, b.Series); c != 0 {
			return c
		}
		return order[a.Metric] - order[b.Metric]
	})
	return figs
}

// trendOf judges a trend as `ndbench history check` does.
func trendOf(fig history.Figure, pts []history.Point, opt history.ChangePointOptions) (*out[HistoryTrend], error) {
	res := HistoryTrend{Figure: fig.String(), Unit: fig.Unit(), WorseUp: fig.WorseUp(), Points: make([]TrendPoint, 0, len(pts)),
		ChangePoints: []TrendChange{}, Verdict: TrendVerdictOut{Cause: -1}}
	vals := make([]float64, len(pts))
	for i, p := range pts {
		tags := p.Tags
		if tags == nil {
			tags = map[string]string{}
		}
		res.Points = append(res.Points, TrendPoint{RunID: p.RunID, Started: p.Started, Tags: tags, Value: p.Value})
		vals[i] = p.Value
	}
	r, err := history.Check(vals, fig.WorseUp(), opt)
	switch {
	case errors.Is(err, history.ErrTooShort):
		res.Verdict.Status, res.Verdict.Detail = "not judged", err.Error()
		return &out[HistoryTrend]{res}, nil
	case err != nil:
		return nil, newProblem(http.StatusUnprocessableEntity, err.Error())
	}
	for _, c := range r.ChangePoints {
		dir := "improvement"
		if (c.After > c.Before) == fig.WorseUp() {
			dir = "regression"
		}
		ch := 0.0
		if c.Before != 0 {
			ch = (c.After - c.Before) / c.Before
		}
		p := pts[c.Index]
		res.ChangePoints = append(res.ChangePoints, TrendChange{Index: c.Index, RunID: p.RunID, Started: p.Started,
			Before: c.Before, After: c.After, Change: ch, P: c.P, Direction: dir})
	}
	newest := pts[len(pts)-1].RunID
	if !r.Regressed {
		res.Verdict.Status = "pass"
		res.Verdict.Detail = fmt.Sprintf("the newest run (%d) is in no regression of %s", newest, fig)
		return &out[HistoryTrend]{res}, nil
	}
	c := r.ChangePoints[r.Cause]
	start := pts[c.Index]
	res.Verdict = TrendVerdictOut{Status: "regression", Cause: r.Cause, Detail: fmt.Sprintf("the newest run (%d) is in a regression of %s that started at run %d [%s]: %.4g -> %.4g %s",
		newest, fig, start.RunID, history.TagsText(start.Tags), r.Baseline, r.Newest, fig.Unit())}
	return &out[HistoryTrend]{res}, nil
}
