package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ndbench/ndbench/driver"
)

// opsDriver is a store that offers two operations beyond Read and Write: "scan" (read-like)
// and "purge" (neither). It exists to show issue 9's bar: an operation is added in the
// driver's package only, and every output names it with no other change.
type opsDriver struct {
	mu   sync.Mutex
	data map[string][]byte
}

type opsOptions struct {
	Capacity int `opt:"capacity" default:"1000" min:"1" help:"unused; a driver has options"`
}

func (d *opsDriver) Init(context.Context, any) error { d.data = map[string][]byte{}; return nil }
func (d *opsDriver) Close() error                    { return nil }

func (d *opsDriver) Read(_ context.Context, key string) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.data[key]
	if !ok {
		return nil, driver.ErrNotFound
	}
	return v, nil
}

func (d *opsDriver) Write(_ context.Context, key string, value []byte) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.data[key] = append([]byte(nil), value...)
	return nil
}

// Do runs scan (how many keys share key's first two bytes) and purge (delete key).
func (d *opsDriver) Do(ctx context.Context, op int, key string, _ []byte) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch op {
	case 0:
		n := 0
		for k := range d.data {
			if strings.HasPrefix(k, key[:min(2, len(key))]) {
				n++
			}
		}
		if n == 0 {
			return nil, driver.ErrNotFound
		}
		return []byte{byte(n)}, nil
	case 1:
		delete(d.data, key)
		return nil, nil
	}
	return nil, fmt.Errorf("opsdemo: no operation %d", op)
}

func init() {
	driver.MustRegister(driver.Definition{
		Name: "opsdemo", Summary: "test store with scan and purge operations",
		NewOptions: func() any { return &opsOptions{} },
		New:        func() driver.Driver { return &opsDriver{} },
		Operations: []driver.Operation{
			{Name: "scan", Kind: driver.KindRead, Help: "count keys with the key's prefix"},
			{Name: "purge", Kind: driver.KindOther, Help: "delete the key"},
		},
	})
}

// opsArgs configure a class "lookup" that mixes the driver's two extra operations 3:1,
// beside reads whose mix is the driver's scan (NDBench's "any read operation behind the
// read port").
var opsArgs = []string{"--driver", "opsdemo",
	"--set", "workload.readRate=200", "--set", "workload.writeRate=200", "--set", "workload.readMix=read:1,scan:1",
	"--set", "workload.ops.lookup.rate=400", "--set", "workload.ops.lookup.workers=2",
	"--set", "workload.ops.lookup.mix=scan:3,purge:1"}

// TestNewOperationAppearsInEveryOutput: the class, its operations and the read class's
// operations appear in the terminal summary, the JSON and HTML reports, the HDR log, the
// API's stats, histograms and intervals, Prometheus and the SSE stream.
func TestNewOperationAppearsInEveryOutput(t *testing.T) {
	series := []string{"read", "read.read", "read.scan", "write", "lookup", "lookup.scan", "lookup.purge"}

	t.Run("run", func(t *testing.T) {
		dir := t.TempDir()
		rep, html, hlog := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.html"), filepath.Join(dir, "r.hlog")
		code, out, errOut := ndbench(t, nil, append([]string{"run", "--duration", "2s",
			"--report", rep, "--report-html", html, "--hdr-log", hlog}, opsArgs...)...)
		if code != 0 {
			t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
		}
		r := readReport(t, rep)
		for _, name := range series {
			if s, ok := r.Ops[name]; !ok || s.Count+s.Errors == 0 {
				t.Errorf("JSON report: %s = %+v (present %v), want operations", name, s, ok)
			}
			if !strings.Contains(out, "\n"+name+" ") {
				t.Errorf("terminal summary has no row %q:\n%s", name, out)
			}
		}
		if lk, sc, pu := r.Ops["lookup"], r.Ops["lookup.scan"], r.Ops["lookup.purge"]; lk.Count+lk.Errors != sc.Count+sc.Errors+pu.Count+pu.Errors {
			t.Errorf("class lookup counted %d operations, its operations %d + %d", lk.Count+lk.Errors, sc.Count+sc.Errors, pu.Count+pu.Errors)
		} else if ratio := float64(sc.Count+sc.Errors) / float64(pu.Count+pu.Errors); ratio < 2 || ratio > 4.5 {
			t.Errorf("scan:purge = %.2f, want about 3 (mix scan:3,purge:1)", ratio)
		}
		if s := r.Ops["lookup"]; s.TargetRate != 400 || s.PeakWorkers != 2 {
			t.Errorf("lookup target %v peak workers %d, want 400 and 2", s.TargetRate, s.PeakWorkers)
		}
		page, err := os.ReadFile(html)
		if err != nil {
			t.Fatal(err)
		}
		logText, err := os.ReadFile(hlog)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range series {
			if !strings.Contains(string(page), ">"+name+"<") {
				t.Errorf("HTML report has no table row %q", name)
			}
			if !strings.Contains(string(logText), "Tag="+name+"-response,") {
				t.Errorf("HDR log has no %s-response histograms", name)
			}
		}
	})

	t.Run("serve", func(t *testing.T) {
		base, _, _, stop := startServe(t, nil, append([]string{"--listen", "127.0.0.1:0", "--start"}, opsArgs...)...)
		defer stop()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		// The interval log encodes only once a reader asked: ask now, read at the end.
		if st, body := get(t, base+"/api/v1/stats/intervals?since=0", ""); st != 200 {
			t.Fatalf("/api/v1/stats/intervals: %d %s", st, body)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/stats/stream", nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		// The first interval event with every series.
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var event string
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				event = v
			}
			data, ok := strings.CutPrefix(line, "data: ")
			if !ok || event != "interval" {
				continue
			}
			var iv struct {
				Ops map[string]struct {
					Count int64 `json:"count"`
				} `json:"ops"`
			}
			if err := json.Unmarshal([]byte(data), &iv); err != nil {
				t.Fatalf("SSE interval: %v", err)
			}
			if iv.Ops["lookup.scan"].Count > 0 {
				break
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("SSE stream ended before an interval with lookup.scan: %v", err)
		}

		var stats struct {
			Cumulative struct {
				Ops map[string]struct {
					Count int64 `json:"count"`
				} `json:"ops"`
			} `json:"cumulative"`
		}
		if st, body := get(t, base+"/api/v1/stats", ""); st != 200 || json.Unmarshal(body, &stats) != nil {
			t.Fatalf("/api/v1/stats: %d %s", st, body)
		}
		_, metrics := get(t, base+"/metrics", "")
		_, hist := get(t, base+"/api/v1/stats/histograms", "")
		_, ivs := get(t, base+"/api/v1/stats/intervals?since=0", "")
		_, status := get(t, base+"/api/v1/status", "")
		for _, name := range series {
			if stats.Cumulative.Ops[name].Count == 0 {
				t.Errorf("/api/v1/stats: no %s operations", name)
			}
			if !strings.Contains(string(metrics), `ndbench_ops_total{op="`+name+`",result="success"}`) {
				t.Errorf("/metrics has no ndbench_ops_total for op %q", name)
			}
			if !strings.Contains(string(hist), `"`+name+`":`) {
				t.Errorf("/api/v1/stats/histograms has no %q", name)
			}
			if !strings.Contains(string(ivs), `"`+name+`":`) {
				t.Errorf("/api/v1/stats/intervals has no %q", name)
			}
		}
		if !strings.Contains(string(status), `"lookup":true`) {
			t.Errorf("/api/v1/status does not list class lookup as running: %s", status)
		}
	})
}
