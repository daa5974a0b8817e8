// Package scenario runs a scenario file: phases of load (constant, ramp, steps, sine)
// with configuration changes at their starts, hooks that inject faults (a command or an
// HTTP call, at a time or a phase boundary), and thresholds that judge windows of the
// run (a phase, during a hook, from a hook on, sustained over sliding windows, recovery
// after a hook). It is `ndbench scenario run FILE.yaml`.
//
// Every name a scenario refers to (op class, metric, phase, hook, SLA key) is checked when
// the file loads, with an error naming the field and what is allowed: a misspelled
// metric must never pass silently. Thresholds are judged from the node's 1 s intervals
// merged over their windows: percentiles come from merged HDR histograms, never from
// averaged percentiles.
//
// A scenario drives its load through the Node interface, which *node.Node and the
// fleet view (cluster.Fleet) satisfy: on a fleet, shapes are split among the nodes by
// their share and applied at a common instant, Patch goes to the fleet's scope, and the
// Collector is fed by the coordinator's merge; a threshold window holding partial seconds
// (a node's data missing) reports them. Hooks run where the scenario runs (the control
// point); the CLI judges each node's own report for generator saturation besides the
// merged one.
package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/autotune"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/config/presets"
	"github.com/ndbench/ndbench/internal/config/source"
	"github.com/ndbench/ndbench/internal/pacer"
)

// File is a scenario file as written (YAML). See docs/scenarios.md.
type File struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Workload is a workload preset (a built-in name or a file), as `ndbench run -w`.
	Workload string `json:"workload,omitempty"`
	// ConfigFile is a config file (YAML or NDBench .properties), relative to the scenario.
	ConfigFile string `json:"configFile,omitempty"`
	// Config holds configuration keys as a YAML config file does (driver, drivers,
	// workload); it ranks above the preset, the config file and the environment.
	Config map[string]any `json:"config,omitempty"`
	// Backfill writes every key once before the first phase (not measured).
	Backfill bool `json:"backfill,omitempty"`
	// SLA per op class, for recovery thresholds.
	SLA        map[string]map[string]string `json:"sla,omitempty"`
	Phases     []PhaseSpec                  `json:"phases"`
	Hooks      []HookSpec                   `json:"hooks,omitempty"`
	Thresholds []ThresholdSpec              `json:"thresholds,omitempty"`
}

// PhaseSpec is one phase as written.
type PhaseSpec struct {
	Name string `json:"name"`
	// Duration is how long the phase runs; "forever" (last phase only) runs until
	// interrupted: a soak.
	Duration string `json:"duration"`
	// Set changes configuration keys at the phase's start (as the API's PATCH does).
	Set map[string]any `json:"set,omitempty"`
	// Load gives op classes a load shape for the phase; a class not named runs at its
	// configured rate.
	Load map[string]ShapeSpec `json:"load,omitempty"`
	// Autotune makes the phase a capacity search: the rate is searched for the highest one
	// within the SLA, then held there (AIMD) until the phase ends. Duration bounds the
	// whole: a search that has not ended by then fails the phase.
	Autotune *AutotuneSpec `json:"autotune,omitempty"`
}

// AutotuneSpec is an auto-tune phase as written: the fields of a search request
// (autotune.Spec, as POST /api/v1/autotune takes them) and the least capacity that passes.
type AutotuneSpec struct {
	autotune.Spec
	// MinCapacity fails the phase when the capacity found is lower (ops/s; 0: any).
	MinCapacity float64 `json:"minCapacity,omitempty"`
}

// ShapeSpec is one class's load in a phase: exactly one of its fields.
type ShapeSpec struct {
	Rate  *float64   `json:"rate,omitempty"`
	Ramp  *RampSpec  `json:"ramp,omitempty"`
	Steps *StepsSpec `json:"steps,omitempty"`
	Sine  *SineSpec  `json:"sine,omitempty"`
	// Off stops the class for the phase.
	Off bool `json:"off,omitempty"`
}

// RampSpec is a linear ramp from From to To ops/s over Over, then To.
type RampSpec struct {
	From float64 `json:"from"`
	To   float64 `json:"to"`
	Over string  `json:"over"`
}

// StepsSpec holds each rate for Every, then the last one.
type StepsSpec struct {
	Rates []float64 `json:"rates"`
	Every string    `json:"every"`
}

// SineSpec oscillates around Mean by Amplitude with Period.
type SineSpec struct {
	Mean      float64 `json:"mean"`
	Amplitude float64 `json:"amplitude"`
	Period    string  `json:"period"`
}

// HookSpec is one hook as written: an action at a time, optionally undone after For.
type HookSpec struct {
	Name string `json:"name"`
	// At is when the hook fires: "PHASE" (its start), "PHASE + 30s", "PHASE end", or an
	// offset from the scenario's start ("90s").
	At string `json:"at"`
	ActionSpec
	// For is how long the fault lasts before Undo runs; the hook's "during" window ends
	// when Undo (or, without For, the action) has finished.
	For  string      `json:"for,omitempty"`
	Undo *ActionSpec `json:"undo,omitempty"`
}

// ActionSpec is a command or an HTTP call, with its timeout and expected outcome.
type ActionSpec struct {
	// Run is a shell command (sh -c), with the environment of ndbench.
	Run string `json:"run,omitempty"`
	// ExpectExit is the exit code that counts as success (default 0).
	ExpectExit *int      `json:"expectExit,omitempty"`
	HTTP       *HTTPSpec `json:"http,omitempty"`
	// Timeout bounds the action (default 30s).
	Timeout string `json:"timeout,omitempty"`
}

// HTTPSpec is an HTTP call; ${VAR} in URL, body and headers is taken from the environment.
type HTTPSpec struct {
	Method  string            `json:"method,omitempty"` // default GET, or POST with a body
	URL     string            `json:"url"`
	Body    string            `json:"body,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// ExpectStatus is the status that counts as success (default: any 2xx).
	ExpectStatus int `json:"expectStatus,omitempty"`
}

// ThresholdSpec is one threshold as written.
type ThresholdSpec struct {
	// Name defaults to the check and its window.
	Name string `json:"name,omitempty"`
	// Check is "CLASS.METRIC OP VALUE", e.g. "read.p99 < 20ms".
	Check string `json:"check"`
	// Window is "run" (default), "phase P", "during H", "from H + 30s", each optionally
	// followed by "for D" and "sustained D".
	Window string `json:"window,omitempty"`
	// SLA overrides the scenario's SLA of the class for a recovery check.
	SLA map[string]string `json:"sla,omitempty"`
	// Abort stops the scenario as soon as the threshold fails (exit code 3).
	Abort bool `json:"abort,omitempty"`
}

// Forever is a phase duration without end (a soak): only the last phase may have it.
const Forever time.Duration = -1

// Scenario is a loaded, checked scenario.
type Scenario struct {
	Path     string
	Name     string
	Desc     string
	Snapshot *config.Snapshot
	Backfill bool
	Phases   []Phase
	Hooks    []Hook
	// Thresholds in file order.
	Thresholds []*Threshold
	// Classes are the workload's op classes (as configured before the first phase).
	Classes []string
	// Inputs are the files the scenario read: its own, and the configFile and workload
	// files it names. A run's outputs must never replace one.
	Inputs []Input
}

// Input is a file a scenario read, with what it is for messages ("the scenario file").
type Input struct {
	What string
	Path string
}

// Phase is one checked phase.
type Phase struct {
	Name     string
	Duration time.Duration // Forever for a soak
	Set      map[string]string
	// Shapes by class (nil shape: the class is stopped for the phase).
	Shapes map[string]pacer.Shape
	// Load describes Shapes for the timeline.
	Load map[string]string
	// Start is the offset from the scenario's start.
	Start time.Duration
	// Autotune is set for a capacity search phase.
	Autotune *PhaseAutotune
}

// PhaseAutotune is a checked auto-tune phase.
type PhaseAutotune struct {
	Settings    autotune.Settings // Hold set: the phase holds the rate it found
	Class       string            // "" tunes every enabled class with a rate, ratio kept
	MinCapacity float64
}

// Hook is one checked hook.
type Hook struct {
	Name   string
	Phase  string        // the phase At refers to ("" for a scenario offset)
	At     time.Duration // offset from the scenario's start
	AtText string
	Action Action
	For    time.Duration
	Undo   *Action
}

// Action is a checked command or HTTP call.
type Action struct {
	Run          string
	ExpectExit   int
	HTTP         *HTTPSpec
	ExpectStatus int // 0: any 2xx
	Timeout      time.Duration
}

// DefaultHookTimeout bounds a hook action that gives no timeout.
const DefaultHookTimeout = 30 * time.Second

// MaxSustained bounds a sustained window: each second of it keeps a histogram per class
// (about 190 KB), so 10 minutes cost about 110 MB per class.
const MaxSustained = 10 * time.Minute

// Options are what the command line adds to a scenario file.
type Options struct {
	Env  []string // os.Environ() form: NDBENCH_* config, ${VAR} expansion
	Sets []string // --set key=value, above the file's config
}

// Load reads and checks a scenario file. Errors are driver.FieldErrors naming every bad
// field (for the file's structure) or a plain error for an unreadable file.
func Load(path string, opts Options) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read scenario %s: %w", path, err)
	}
	return Parse(path, data, opts)
}

// Parse checks a scenario file's contents; path locates relative files and names it in
// errors.
func Parse(path string, data []byte, opts Options) (*Scenario, error) {
	var f File
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", path, source.YAMLError(data, err))
	}
	sc := &Scenario{Path: path, Name: f.Name, Desc: f.Description, Backfill: f.Backfill}
	pa := &parsing{path: path, env: envMap(opts.Env)}
	if sc.Name == "" {
		sc.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}

	snap, err := loadConfig(path, &f, pa.env, opts)
	if err != nil {
		return nil, err
	}
	sc.Snapshot = snap
	sc.Classes = snap.Config.Workload.ClassNames()
	sc.Inputs = []Input{{"the scenario file", path}}
	if f.ConfigFile != "" {
		sc.Inputs = append(sc.Inputs, Input{"the scenario's configFile", relative(path, f.ConfigFile)})
	}
	if _, builtin := presets.Lookup(f.Workload); f.Workload != "" && !builtin {
		sc.Inputs = append(sc.Inputs, Input{"the scenario's workload file", relative(path, f.Workload)})
	}
	classAllowed := "op classes of the workload: " + strings.Join(sc.Classes, ", ")

	phases := pa.phases(sc, f.Phases, snap)
	pa.hooks(sc, f.Hooks, phases)
	pa.thresholds(sc, &f, classAllowed)
	for class := range f.SLA {
		if !slices.Contains(sc.Classes, class) {
			pa.add("sla."+class, class, classAllowed)
		}
	}
	if len(pa.errs) > 0 {
		return nil, pa.errs
	}
	return sc, nil
}

// parsing is what Parse gathers while it checks a file: the field errors, each naming
// the file, and the environment ${VAR}s expand from.
type parsing struct {
	path string
	env  map[string]string
	errs driver.FieldErrors
}

// add records a field error of the file.
func (pa *parsing) add(field, value, allowed string) {
	pa.errs = append(pa.errs, &driver.FieldError{Field: field, Value: value, Allowed: allowed, Source: "scenario " + pa.path})
}

var nameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

// End is the offset at which the scenario ends, or Forever.
func (sc *Scenario) End() time.Duration {
	if len(sc.Phases) > 0 && sc.Phases[len(sc.Phases)-1].Duration == Forever {
		return Forever
	}
	var d time.Duration
	for _, p := range sc.Phases {
		d += p.Duration
	}
	return d
}
