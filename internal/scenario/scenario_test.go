package scenario

import (
	"strings"
	"testing"
	"time"

	_ "github.com/ndbench/ndbench/drivers/memory"
)

// base is a valid scenario the table below breaks one name at a time.
const base = `
name: t
config:
  driver: {name: memory}
  workload: {readRate: 100, writeRate: 20, numKeys: 100}
sla:
  read: {p99: 10ms, errors: 1%}
phases:
  - name: warm
    duration: 10s
  - name: steady
    duration: 1m
    set: {workload.readRate: 200}
    load:
      read: {ramp: {from: 10, to: 100, over: 30s}}
      write: {steps: {rates: [10, 20], every: 10s}}
hooks:
  - name: pause
    at: steady + 10s
    run: "true"
    for: 3s
    undo: {run: "true"}
thresholds:
  - check: read.p99 < 20ms
    window: phase steady
  - check: read.p99.9 <= 50ms
    window: during pause
  - check: write.errors < 0.1%
    window: from pause + 10s for 20s
  - check: read.recovery < 15s
    window: from pause
  - check: read.achieved > 99%
    window: phase steady sustained 10s
    abort: true
`

func parse(t *testing.T, text string) (*Scenario, error) {
	t.Helper()
	return Parse("test.yaml", []byte(text), Options{})
}

func TestParseValid(t *testing.T) {
	sc, err := parse(t, base)
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Phases) != 2 || sc.Phases[1].Start != 10*time.Second || sc.End() != 70*time.Second {
		t.Errorf("phases %+v, end %s", sc.Phases, sc.End())
	}
	if h := sc.Hooks[0]; h.At != 20*time.Second || h.Phase != "steady" || h.For != 3*time.Second || h.Undo == nil {
		t.Errorf("hook %+v", h)
	}
	th := sc.Thresholds
	if len(th) != 5 {
		t.Fatalf("%d thresholds", len(th))
	}
	if th[0].Class != "read" || th[0].Quantile != 99 || th[0].Bound != 20000 || th[0].Window.Kind != "phase" {
		t.Errorf("threshold 0: %+v", th[0])
	}
	if th[1].Quantile != 99.9 || th[1].Op != "<=" || th[1].Window.Kind != "during" {
		t.Errorf("threshold 1: %+v", th[1])
	}
	if th[2].Bound != 0.001 || !th[2].Percent || th[2].Window.Offset != 10*time.Second || th[2].Window.For != 20*time.Second {
		t.Errorf("threshold 2: %+v", th[2])
	}
	if th[3].SLA == nil || th[3].SLA.Latency != 10000 || th[3].SLA.Errors != 0.01 || th[3].Bound != 15 {
		t.Errorf("threshold 3: %+v", th[3])
	}
	if th[4].Window.Sustained != 10*time.Second || !th[4].Abort || th[4].Bound != 0.99 {
		t.Errorf("threshold 4: %+v", th[4])
	}
	if got := sc.suiteOf(th[1].Window); got != "steady" {
		t.Errorf("suite of a hook window = %q, want the hook's phase", got)
	}
}

// TestParseNamesEveryBadName: every misspelled name is an error that names the field, the
// value and what is allowed, never a silent pass (k6 #1526).
func TestParseNamesEveryBadName(t *testing.T) {
	tests := []struct {
		name, from, to string
		want           []string // in the error
	}{
		{"class in a check", "check: read.p99 < 20ms", "check: raed.p99 < 20ms", []string{"thresholds[0].check", "raed", "read, write"}},
		{"metric", "check: read.p99 < 20ms", "check: read.p99x < 20ms", []string{"thresholds[0].check", "p99x", "achieved"}},
		{"percentile out of range", "check: read.p99 < 20ms", "check: read.p100 < 20ms", []string{"p100", "metrics"}},
		{"operator", "check: read.p99 < 20ms", "check: read.p99 = 20ms", []string{"thresholds[0].check", "OP is"}},
		{"latency without a unit", "check: read.p99 < 20ms", "check: read.p99 < 20", []string{"thresholds[0].check", "a duration"}},
		{"achieved without %", "check: read.achieved > 99%", "check: read.achieved > 0.99", []string{"thresholds[4].check", "percentage"}},
		{"errors as a duration", "check: write.errors < 0.1%", "check: write.errors < 1ms", []string{"thresholds[2].check", "count"}},
		{"phase in a window", "window: phase steady", "window: phase stedy", []string{"thresholds[0].window", "stedy", "warm, steady"}},
		{"hook in a during window", "window: during pause", "window: during paus", []string{"thresholds[1].window", "paus", "hooks: pause"}},
		{"hook in a from window", "window: from pause + 10s for 20s", "window: from pose + 10s", []string{"thresholds[2].window", "pose"}},
		{"window keyword", "window: phase steady", "window: whilst steady", []string{"thresholds[0].window", "during HOOK"}},
		{"sustained too long", "sustained 10s", "sustained 1h", []string{"thresholds[4].window", "sustained"}},
		{"recovery window", "window: from pause\n", "window: during pause\n", []string{"thresholds[3].window", "recovery"}},
		{"SLA key", "read: {p99: 10ms, errors: 1%}", "read: {p99: 10ms, erors: 1%}", []string{"erors", "SLA keys"}},
		{"SLA class", "sla:\n  read:", "sla:\n  reed:", []string{"sla.reed", "read, write"}},
		{"hook at a phase", "at: steady + 10s", "at: stedy + 10s", []string{"hooks.pause.at", "stedy", "phases: warm, steady"}},
		{"hook after its phase", "at: steady + 10s", "at: warm + 20s", []string{"hooks.pause.at", "after the end of phase warm"}},
		{"hook without an action", `run: "true"` + "\n    for", "for", []string{"hooks.pause", "run (a command) or http"}},
		{"undo without for", "    for: 3s\n", "", []string{"hooks.pause.for", "required with undo"}},
		{"load class", "read: {ramp:", "reed: {ramp:", []string{"phases.steady.load.reed", "read, write"}},
		{"load shape", "{steps: {rates: [10, 20], every: 10s}}", "{steps: {rates: [10, 20], every: 10s}, rate: 5}", []string{"phases.steady.load.write", "exactly one"}},
		{"set key", "workload.readRate: 200", "workload.readRat: 200", []string{"phases.steady.set.workload.readRat"}},
		{"set value", "workload.readRate: 200", "workload.readRate: -1", []string{"phases.steady.set.workload.readRate"}},
		{"duration", "duration: 10s", "duration: ten", []string{"phases.warm.duration", "ten"}},
		{"forever not last", "duration: 10s", "duration: forever", []string{"phases.warm.duration", "last phase"}},
		{"duplicate phase", "name: steady", "name: warm", []string{"phases.warm.name", "no other phase"}},
		{"unknown field", "abort: true", "abrot: true", []string{"abrot"}},
		{"config key", "readRate: 100,", "readRat: 100,", []string{"workload.readRat"}},
		{"autotune unknown field", "  - name: warm\n    duration: 10s", "  - name: warm\n    duration: 10s\n    autotune: {sla: x}", []string{"sla"}},
		{"autotune latency", "  - name: warm\n    duration: 10s", "  - name: warm\n    duration: 10s\n    autotune: {latency: soon}", []string{"phases.warm.autotune.latency", "soon"}},
		{"autotune percentile", "  - name: warm\n    duration: 10s", "  - name: warm\n    duration: 10s\n    autotune: {percentile: 150}", []string{"phases.warm.autotune.percentile"}},
		{"autotune class", "  - name: warm\n    duration: 10s", "  - name: warm\n    duration: 10s\n    autotune: {class: reads}", []string{"phases.warm.autotune.class", "reads", "op classes of the workload"}},
		{"autotune hold", "  - name: warm\n    duration: 10s", "  - name: warm\n    duration: 10s\n    autotune: {hold: true}", []string{"phases.warm.autotune.hold", "always holds"}},
		{"autotune with load", "  - name: warm\n    duration: 10s", "  - name: warm\n    duration: 10s\n    autotune: {latency: 5ms}\n    load: {read: {rate: 10}}", []string{"phases.warm.autotune", "give it no load"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(base, tt.from) {
				t.Fatalf("base has no %q", tt.from)
			}
			_, err := parse(t, strings.Replace(base, tt.from, tt.to, 1))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not name %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestParseEnvironment(t *testing.T) {
	text := strings.Replace(base, `run: "true"`, `http: {url: "http://${PROXY:-127.0.0.1:8474}/proxies/${NAME}", method: post, body: '{"x": 1}'}`, 1)
	if _, err := parse(t, text); err == nil || !strings.Contains(err.Error(), "NAME is not set") {
		t.Errorf("an unset variable: %v", err)
	}
	sc, err := Parse("t.yaml", []byte(text), Options{Env: []string{"NAME=redis"}})
	if err != nil {
		t.Fatal(err)
	}
	if h := sc.Hooks[0].Action.HTTP; h.URL != "http://127.0.0.1:8474/proxies/redis" || h.Method != "POST" {
		t.Errorf("http %+v", h)
	}
	// --set ranks above the file's config.
	sc, err = Parse("t.yaml", []byte(base), Options{Sets: []string{"workload.readRate=7"}})
	if err != nil || sc.Snapshot.Config.Workload.ReadRate != 7 {
		t.Errorf("--set: %v, %v", err, sc)
	}
}
