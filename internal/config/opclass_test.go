package config

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/stats"
)

// searchDriver offers operations beyond Read and Write, for op class configuration.
type searchDriver struct{ fakeDriver }

func (searchDriver) Do(context.Context, int, string, []byte) ([]byte, error) { return nil, nil }

func init() {
	driver.MustRegister(driver.Definition{Name: "fake-search", Summary: "test",
		New:        func() driver.Driver { return searchDriver{} },
		NewOptions: func() any { return &fakeOtherOptions{} },
		Operations: []driver.Operation{{Name: "search", Kind: driver.KindRead}, {Name: "purge", Kind: driver.KindOther}}})
}

var selectSearch = []string{"NDBENCH_DRIVER_NAME=fake-search"}

type pipeOptions struct {
	Mode string `opt:"mode" default:"direct" enum:"direct,pool" help:"test"`
}

func init() {
	driver.MustRegister(driver.Definition{Name: "fake-pipe", Summary: "test",
		New:        func() driver.Driver { return fakeDriver{} },
		NewOptions: func() any { return &pipeOptions{} },
		Pipelines:  func(o any) bool { return o.(*pipeOptions).Mode == "direct" }})
}

var selectPipe = []string{"NDBENCH_DRIVER_NAME=fake-pipe"}

// TestPipelineAcceptedWhereTheDriverPipelines: workload.pipeline above 1 passes with a
// driver that pipelines in its configured mode.
func TestPipelineAcceptedWhereTheDriverPipelines(t *testing.T) {
	snap := mustLoad(t, Sources{Env: selectPipe, Sets: []string{"workload.pipeline=16"}})
	if snap.Config.Workload.Pipeline != 16 {
		t.Errorf("pipeline = %d, want 16", snap.Config.Workload.Pipeline)
	}
}

func TestOpClasses(t *testing.T) {
	snap := mustLoad(t, Sources{Env: selectSearch, Sets: []string{
		"workload.ops.lookup.rate=250", "workload.ops.lookup.workers=3", "workload.ops.lookup.mix=search:9, purge:1",
		"workload.ops.search.enabled=false", // mix defaults to the operation named like the class
		"workload.readMix=read:4,search:1",
	}})
	w := snap.Config.Workload
	if got := strings.Join(w.ClassNames(), ","); got != "read,write,lookup,search" {
		t.Fatalf("classes %s", got)
	}
	lk, ok := w.Class("lookup")
	if !ok || lk.Rate != 250 || lk.Workers != 3 || !lk.Enabled || lk.MaxWorkers != 0 {
		t.Errorf("lookup = %+v", lk)
	}
	if len(lk.Mix) != 2 || lk.Mix[0] != (MixEntry{"search", 9}) || lk.Mix[1] != (MixEntry{"purge", 1}) {
		t.Errorf("lookup mix = %+v", lk.Mix)
	}
	if s, _ := w.Class("search"); s.Enabled || len(s.Mix) != 1 || s.Mix[0].Op != "search" || s.Workers != 1 || s.Rate != 100 {
		t.Errorf("search = %+v, want the defaults, disabled, running operation search", s)
	}
	if r, _ := w.Class("read"); r.Workers != w.Readers || r.Rate != w.ReadRate || len(r.Mix) != 2 {
		t.Errorf("read class = %+v", r)
	}
	// Every option of a declared class is listed with its source, defaults included.
	for key, source := range map[string]string{"workload.ops.lookup.rate": "--set", "workload.ops.lookup.maxWorkers": "default",
		"workload.ops.search.mix": "default", "workload.readMix": "--set", "workload.writeMix": "default"} {
		if _, src, ok := snap.Value(key); !ok || !strings.HasPrefix(src, source) {
			t.Errorf("%s: source %q (listed %v), want %s", key, src, ok, source)
		}
	}
}

func TestOpClassErrors(t *testing.T) {
	tests := []struct {
		name string
		env  []string
		sets []string
		// field and a piece of the allowed text
		field, allowed string
	}{
		{"operation the driver lacks", selectFake, []string{"workload.ops.scan.rate=5"},
			"workload.ops.scan.mix", "operations of driver fake-kv: read, write"},
		{"read mix operation the driver lacks", selectSearch, []string{"workload.readMix=read,scan"},
			"workload.readMix", "operations of driver fake-search: read, write, search, purge"},
		{"built-in class", selectFake, []string{"workload.ops.read.rate=5"},
			"workload.ops.read.rate", "set it with workload.read* options"},
		{"bad class name", selectFake, []string{"workload.ops.9x.rate=5"},
			"workload.ops.9x.rate", "a letter, then letters"},
		{"unknown class option", selectFake, []string{"workload.ops.x.rat=5"},
			"workload.ops.x.rat", "did you mean rate?"},
		{"class option out of range", selectFake, []string{"workload.ops.x.workers=-1", "workload.ops.x.mix=read"},
			"workload.ops.x.workers", "an integer from 0 to 10000"},
		{"zero weight", selectFake, []string{"workload.readMix=read:0"},
			"workload.readMix", "positive number"},
		{"operation twice", selectFake, []string{"workload.ops.x.mix=read,read"},
			"workload.ops.x.mix", "named twice"},
		{"too many classes", selectFake, []string{"workload.ops.a.mix=read", "workload.ops.b.mix=read", "workload.ops.c.mix=read",
			"workload.ops.d.mix=read", "workload.ops.e.mix=read", "workload.ops.f.mix=read", "workload.ops.g.mix=read",
			"workload.ops.h.mix=read", "workload.ops.i.mix=read"},
			"workload.ops", "at most 8 op classes"},
		{"too many series", selectSearch, []string{"workload.readMix=read,search,purge", "workload.writeMix=read,write",
			"workload.ops.a.mix=read,write,search,purge", "workload.ops.b.mix=read,write,search,purge", "workload.ops.c.mix=read,write,search,purge",
			"workload.ops.d.mix=read,write,search,purge", "workload.ops.e.mix=read,write,search,purge", "workload.ops.f.mix=read,write"},
			"workload.ops", "at most 32 statistics series"},
		{"too many workers", selectFake, []string{"workload.ops.x.workers=9999", "workload.ops.x.mix=read"},
			"workload.ops", "the workers of all op classes together at most 10000"},
		{"pipeline with a driver that does not pipeline", selectFake, []string{"workload.pipeline=4"},
			"workload.pipeline", "driver fake-kv sends one operation per round trip"},
		{"pipeline in a mode without pipelines", selectPipe, []string{"workload.pipeline=4", "drivers.fake-pipe.mode=pool"},
			"workload.pipeline", "pipelines only in another configuration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(Sources{Env: tt.env, Sets: tt.sets})
			fes, ok := driver.AsFieldErrors(err)
			if !ok {
				t.Fatalf("error %v, want field errors", err)
			}
			for _, fe := range fes {
				if fe.Field == tt.field && strings.Contains(fe.Allowed, tt.allowed) {
					return
				}
			}
			t.Errorf("no error on %s allowing %q: %v", tt.field, tt.allowed, err)
		})
	}
}

func TestParseMix(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want string // ops:weights, or "error"
	}{
		{"", "def:1"},
		{"read", "read:1"},
		{" read:9 , scan:1 ", "read:9,scan:1"},
		{"a:0.5,b:1.5", "a:0.5,b:1.5"},
		{"a:-1", "error"},
		{"a:NaN", "error"},
		{"a:x", "error"},
		{"a,,b", "error"},
		{"a,b,c,d,e,f,g,h,i", "error"},
	} {
		m, err := ParseMix(tt.in, "def")
		got := "error"
		if err == nil {
			var parts []string
			for _, e := range m {
				parts = append(parts, e.Op+":"+strings.TrimRight(strings.TrimRight(strconvF(e.Weight), "0"), "."))
			}
			got = strings.Join(parts, ",")
		}
		if got != tt.want {
			t.Errorf("ParseMix(%q) = %s (%v), want %s", tt.in, got, err, tt.want)
		}
	}
}

func strconvF(f float64) string { return strconv.FormatFloat(f, 'f', 3, 64) }

// The validator's bound on series is the collector's, so a change the store accepts never
// fails in the engine for want of a series.
func TestMaxSeriesMatchesStats(t *testing.T) {
	if maxSeries != stats.MaxSeries {
		t.Errorf("config's maxSeries %d, stats.MaxSeries %d", maxSeries, stats.MaxSeries)
	}
}
