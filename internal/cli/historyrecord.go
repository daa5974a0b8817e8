package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ndbench/ndbench/internal/api"
	"github.com/ndbench/ndbench/internal/history"
	"github.com/ndbench/ndbench/internal/report"
	"github.com/ndbench/ndbench/internal/stats"
)

// recordTimeout bounds a recording: a store that does not answer (PostgreSQL behind a
// dead network) costs the command this much, never its report or its exit code.
const recordTimeout = 30 * time.Second

// record stores a run's report in the history as kind "run". A failure is a warning: the
// run's report files are already written, and its exit code is the run's.
func (r *recordFlags) record(ctx context.Context, rep *report.Report, coll *stats.Collector, s *streams) {
	r.recordAs(ctx, s, "run", "", rep, rep, coll)
}

// recordAs stores rep as a run of kind (run, scenario, autotune, fleet) when recording is
// on, and says how to turn it on otherwise. doc is the document kept as the run's report:
// rep itself, or what embeds it (a scenario's report with its outcome). workload, when
// set, names the workload measured (a scenario's name) in place of the preset's. coll,
// when given, is the collector whose cumulative histograms the report's figures came
// from: they are kept too, so percentiles can be recomputed and runs merged later.
func (r *recordFlags) recordAs(ctx context.Context, s *streams, kind, workload string, rep *report.Report, doc any, coll *stats.Collector) {
	if !r.on(s.env) {
		r.hint(s.out)
		return
	}
	target, err := r.resolve(s.env)
	if err != nil {
		fmt.Fprintf(s.err, "WARNING: the run was not recorded in the results history: %v\n", err)
		return
	}
	hists, err := histograms(coll, rep)
	if err != nil {
		fmt.Fprintf(s.err, "WARNING: the %s was not recorded in the results history: %v\n", kindNoun(kind), err)
		return
	}
	st := &sharedStore{target: target}
	defer st.close()
	st.record(ctx, s.out, s.err, kind, workload, r.parsed, rep, doc, hists)
}

// hint says how to record, for a command whose run was not.
func (r *recordFlags) hint(out io.Writer) {
	fmt.Fprintln(out, "to keep this run in the results history (ndbench history list, trend, check),\nrun with --tag KEY=VALUE or --results PATH")
}

// sharedStore is a results store opened on first use and kept open, for a service that
// records many runs and serves the History routes. An open that failed is tried again on
// the next use, so a store that was down at start is used once it is back.
type sharedStore struct {
	target string
	mu     sync.Mutex
	st     history.Store
}

func (h *sharedStore) get(ctx context.Context) (history.Store, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.st != nil {
		return h.st, nil
	}
	st, err := history.Open(ctx, h.target)
	if err != nil {
		return nil, err
	}
	h.st = st
	return st, nil
}

// source is the store as the API's History routes take it.
func (h *sharedStore) source() api.HistorySource {
	return h.get
}

func (h *sharedStore) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.st != nil {
		_ = h.st.Close()
		h.st = nil
	}
}

// record stores rep (kept as doc) as a run of kind with tags and the encoded histograms
// hists; a failure is a warning on errOut and nothing else.
func (h *sharedStore) record(ctx context.Context, out, errOut io.Writer, kind, workload string, tags map[string]string, rep *report.Report, doc any, hists map[string]string) {
	// The run may have ended by a signal: recording it is still wanted.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	id, err := func() (int64, error) {
		raw, err := json.Marshal(doc)
		if err != nil {
			return 0, fmt.Errorf("encode report: %w", err)
		}
		run, err := history.FromReport(rep, raw)
		if err != nil {
			return 0, err
		}
		run.Kind, run.Host, run.Tags, run.Histograms = kind, history.ThisHost(), tags, hists
		if workload != "" {
			run.Workload = workload
		}
		st, err := h.get(ctx)
		if err != nil {
			return 0, err
		}
		return st.Record(ctx, run)
	}()
	if err != nil {
		fmt.Fprintf(errOut, "WARNING: the %s was not recorded in the results history: %v\n", kindNoun(kind), err)
		return
	}
	fmt.Fprintf(out, "recorded as run %d in %s\n", id, history.Display(h.target))
}

// histograms encodes coll's cumulative response and service time histograms of every op
// class the report has figures of, as "CLASS.response" and "CLASS.service" (HdrHistogram
// V2 compressed, base64, microseconds): the distributions the report's percentiles were
// read from.
func histograms(coll *stats.Collector, rep *report.Report) (map[string]string, error) {
	if coll == nil {
		return nil, nil
	}
	out := map[string]string{}
	for _, name := range coll.Names() {
		if s, ok := rep.Ops[name]; !ok || s.Count == 0 {
			continue
		}
		op, ok := coll.Lookup(name)
		if !ok {
			continue
		}
		resp, svc := coll.CumulativeHistograms(op)
		for kind, h := range map[string]*hdrhistogram.Histogram{"response": resp, "service": svc} {
			if h == nil {
				continue
			}
			b, err := stats.EncodeHistogram(h)
			if err != nil {
				return nil, fmt.Errorf("encode the %s %s histogram: %w", name, kind, err)
			}
			out[name+"."+kind] = string(b)
		}
	}
	return out, nil
}

func kindNoun(kind string) string {
	switch kind {
	case "serve":
		return "driver session"
	case "fleet":
		return "fleet run"
	case "autotune":
		return "auto-tune result"
	}
	return kind
}

// ranLoad reports whether rep measured any operation: a session that only connected a
// driver has nothing to trend.
func ranLoad(rep *report.Report) bool {
	for _, s := range rep.Ops {
		if s.Count > 0 || s.Errors > 0 {
			return true
		}
	}
	return false
}

// historySource is the store a service's History routes read: the one it records into
// when recording is on (--results, --tag, NDBENCH_RESULTS), else the default store if it
// exists (runs recorded earlier with --tag); nil when there is none, and the routes say
// how to give one.
func historySource(r *recordFlags, env []string) *sharedStore {
	if r.on(env) {
		if t, err := r.resolve(env); err == nil {
			return &sharedStore{target: t}
		}
		return nil
	}
	t, err := history.DefaultTarget(env)
	if err != nil {
		return nil
	}
	if _, err := os.Stat(t); err != nil {
		return nil
	}
	return &sharedStore{target: t}
}

// historyHooks are what a service's API servers (the node's, the fleet view's) get of
// the results store: the History routes' source and name, and the recording of each
// driver session that ends, as a run of the given kind (nil when recording is off).
type historyHooks struct {
	source       api.HistorySource
	name         string
	onSessionEnd func(kind string) func(*report.Report, *stats.Collector)
}
