//go:build integration

package cli

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/ndbench/ndbench/drivers/all"
	"github.com/ndbench/ndbench/internal/testserver"
)

// stallScenario pauses the real Redis (SIGSTOP) for 3 s in the middle of steady load.
// duringBound is the "during" threshold's p99 bound.
const stallScenario = `
name: redis-stall
config:
  driver: {name: redis}
  drivers:
    redis: {addrs: "${REDIS_ADDR}", readTimeout: 10s, writeTimeout: 10s}
  workload: {readRate: 400, writeRate: 100, numKeys: 1000, readers: 8, writers: 4, maxReaders: 64, maxWriters: 32, opTimeout: 10s}
sla:
  read: {p99: 250ms, errors: 1%, achieved: 90%, stable: 2s}
phases:
  - {name: warm, duration: 2s}
  - {name: fault, duration: 14s}
hooks:
  - name: pause
    at: fault + 1s
    run: kill -STOP $REDIS_PID
    for: 3s
    undo: {run: kill -CONT $REDIS_PID}
thresholds:
  - {name: during, check: "read.p99 < BOUND", window: during pause}
  - {name: after, check: read.p99 < 250ms, window: from pause + 10s}
  - {name: recovery, check: read.recovery < 10s, window: from pause}
`

type junitDoc struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Suites   []struct {
		Name  string `xml:"name,attr"`
		Cases []struct {
			Name  string `xml:"name,attr"`
			Props []struct {
				Name  string `xml:"name,attr"`
				Value string `xml:"value,attr"`
			} `xml:"properties>property"`
			Failure *struct {
				Message string `xml:"message,attr"`
			} `xml:"failure"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// TestScenarioRedisStall is the scenario bar: a hook SIGSTOPs a real Redis for 3 s; the
// "during" threshold fails, the "from hook + 10s" one passes, the recovery time is
// reported, the JUnit XML parses, and the run exits 1. With the "during" bound relaxed
// it exits 0.
func TestScenarioRedisStall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := testserver.Redis(ctx)
	if err != nil {
		t.Fatalf("start redis: %v", err)
	}
	defer func() {
		if t.Failed() {
			t.Logf("redis log tail:\n%s", srv.LogTail())
		}
		_ = srv.Stop()
	}()
	dir := t.TempDir()
	env := append(os.Environ(), "REDIS_ADDR="+srv.Addr(), fmt.Sprintf("REDIS_PID=%d", srv.PID()),
		"GITHUB_STEP_SUMMARY="+filepath.Join(dir, "summary.md"))

	for _, tc := range []struct {
		bound string
		code  int
	}{{"100ms", 1}, {"30s", 0}} {
		t.Run("during<"+tc.bound, func(t *testing.T) {
			file := filepath.Join(dir, "stall-"+tc.bound+".yaml")
			if err := os.WriteFile(file, []byte(strings.Replace(stallScenario, "BOUND", tc.bound, 1)), 0o600); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "out-"+tc.bound)
			var stdout, stderr bytes.Buffer
			code := execute(ctx, []string{"scenario", "run", file, "--out-dir", out}, &streams{out: &stdout, err: &stderr, env: env})
			t.Logf("stdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
			if code != tc.code {
				t.Fatalf("exit code %d, want %d", code, tc.code)
			}
			b, err := os.ReadFile(filepath.Join(out, "junit.xml"))
			if err != nil {
				t.Fatal(err)
			}
			var doc junitDoc
			if err := xml.Unmarshal(b, &doc); err != nil {
				t.Fatalf("JUnit XML does not parse: %v\n%s", err, b)
			}
			cases := map[string]bool{} // name -> failed
			observed := map[string]string{}
			for _, s := range doc.Suites {
				for _, c := range s.Cases {
					cases[c.Name] = c.Failure != nil
					for _, p := range c.Props {
						if p.Name == "observed" {
							observed[c.Name] = p.Value
						}
					}
				}
			}
			if len(cases) != 3 || cases["during"] != (tc.code == 1) || cases["after"] || cases["recovery"] {
				t.Errorf("JUnit cases (name: failed) %v, observed %v", cases, observed)
			}
			rec, err := time.ParseDuration(observed["recovery"])
			if err != nil || rec < 3*time.Second || rec >= 10*time.Second {
				t.Errorf("recovery observed %q (%v): want from the 3 s stall to under 10 s", observed["recovery"], err)
			}
			if d, err := time.ParseDuration(observed["during"]); err != nil || d < time.Second {
				t.Errorf("during observed %q: want the stall in the p99", observed["during"])
			}
			rep, err := os.ReadFile(filepath.Join(out, "report.json"))
			if err != nil || !bytes.Contains(rep, []byte(`"timeline"`)) || !bytes.Contains(rep, []byte(`"name": "pause"`)) {
				t.Errorf("report.json lacks the timeline with the hook (%v)", err)
			}
		})
	}
	md, err := os.ReadFile(filepath.Join(dir, "summary.md"))
	if err != nil || strings.Count(string(md), "### Scenario redis-stall") != 2 {
		t.Errorf("GITHUB_STEP_SUMMARY: %v\n%s", err, md)
	}
}
