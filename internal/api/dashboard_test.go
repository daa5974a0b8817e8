package api

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/stats"
)

// dashboardPath is the Grafana dashboard shipped for these metrics.
const dashboardPath = "../../deploy/grafana/ndbench.json"

// grafanaDashboard is the part of Grafana's dashboard JSON model the test checks.
type grafanaDashboard struct {
	Title         string         `json:"title"`
	UID           string         `json:"uid"`
	SchemaVersion int            `json:"schemaVersion"`
	Panels        []grafanaPanel `json:"panels"`
	Templating    struct {
		List []struct {
			Name  string `json:"name"`
			Type  string `json:"type"`
			Query any    `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type grafanaPanel struct {
	ID         int                 `json:"id"`
	Type       string              `json:"type"`
	Title      string              `json:"title"`
	Datasource *grafanaDSRef       `json:"datasource"`
	GridPos    *struct{ W, H int } `json:"gridPos"`
	Targets    []grafanaTarget     `json:"targets"`
}

type grafanaTarget struct {
	RefID      string        `json:"refId"`
	Expr       string        `json:"expr"`
	Datasource *grafanaDSRef `json:"datasource"`
}

type grafanaDSRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

var (
	// selectorName is a metric name in a PromQL selector: followed by { or [ (a
	// function is followed by "(", a label name by "=").
	selectorName = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\s*[{\[]`)
	// ndbenchName is any ndbench metric name, also a bare one.
	ndbenchName = regexp.MustCompile(`\bndbench_[a-zA-Z0-9_]+`)
)

// exposedNames scrapes a node's /metrics after one interval and returns every series
// name a query can use: family names, and for histograms also _bucket, _sum and _count.
func exposedNames(t *testing.T) map[string]bool {
	t.Helper()
	e := newEnv(t)
	c := e.inst.Collector()
	c.Recorder(stats.OpRead).Shard(0).Success(time.Millisecond, time.Millisecond)
	c.Recorder(stats.OpRead).Shard(0).Failure(driver.ClassTimeout)
	c.Tick(time.Now()) // the server's subscriber feeds the metrics, gauges included
	names := map[string]bool{}
	for name, mf := range scrape(t, e.ts.URL+"/metrics", map[string]string{"Authorization": "Bearer " + testToken}) {
		names[name] = true
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				names[name+s] = true
			}
		}
	}
	return names
}

// TestGrafanaDashboard checks deploy/grafana/ndbench.json without a Grafana: it is a
// dashboard (title, uid, panels with queries), every query goes through the data source
// variable, and every metric it names is one the server exposes, so a renamed metric
// cannot leave the dashboard silently empty.
func TestGrafanaDashboard(t *testing.T) {
	data, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	if d.Title == "" || d.UID == "" || d.SchemaVersion == 0 {
		t.Errorf("title %q, uid %q, schemaVersion %d: want all set", d.Title, d.UID, d.SchemaVersion)
	}
	var dsVar string
	for _, v := range d.Templating.List {
		if v.Type == "datasource" && v.Query == "prometheus" {
			dsVar = "${" + v.Name + "}"
		}
	}
	if dsVar == "" {
		t.Fatal("no Prometheus data source variable in templating")
	}

	exposed := exposedNames(t)
	ids := map[int]bool{}
	queries := 0
	used := map[string]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.GridPos == nil || p.GridPos.W == 0 {
			t.Errorf("panel %q has no grid position", p.Title)
		}
		if p.Type == "row" {
			continue
		}
		if p.Title == "" || len(p.Targets) == 0 {
			t.Errorf("panel %d %q: want a title and queries", p.ID, p.Title)
		}
		if p.Datasource == nil || p.Datasource.UID != dsVar {
			t.Errorf("panel %q: data source %+v, want uid %s", p.Title, p.Datasource, dsVar)
		}
		for _, q := range p.Targets {
			queries++
			if q.Expr == "" || q.RefID == "" {
				t.Errorf("panel %q: a query without expr or refId", p.Title)
			}
			if q.Datasource != nil && q.Datasource.UID != dsVar {
				t.Errorf("panel %q query %s: data source %+v, want uid %s", p.Title, q.RefID, q.Datasource, dsVar)
			}
			for _, m := range selectorName.FindAllStringSubmatch(q.Expr, -1) {
				used[m[1]] = true
			}
			for _, m := range ndbenchName.FindAllString(q.Expr, -1) {
				used[m] = true
			}
		}
	}
	if queries == 0 {
		t.Fatal("no queries")
	}
	for name := range used {
		if !exposed[name] {
			t.Errorf("the dashboard queries %s, which /metrics does not expose", name)
		}
	}
	// The dashboard's reason to exist: fleet-wide percentiles from the histograms.
	for _, want := range []string{"ndbench_response_seconds_bucket", "ndbench_ops_total", "ndbench_errors_total",
		"ndbench_target_rate", "ndbench_backlog_seconds"} {
		if !used[want] {
			t.Errorf("the dashboard does not use %s", want)
		}
	}
	if !slices.ContainsFunc(d.Panels, func(p grafanaPanel) bool {
		return slices.ContainsFunc(p.Targets, func(q grafanaTarget) bool {
			return strings.Contains(q.Expr, "histogram_quantile(0.99, sum by (le)")
		})
	}) {
		t.Error("no fleet-wide p99 (histogram_quantile(0.99, sum by (le) ...))")
	}
}
