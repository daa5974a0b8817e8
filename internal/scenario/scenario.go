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
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
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
		return nil, fmt.Errorf("scenario %s: %w", path, err)
	}
	sc := &Scenario{Path: path, Name: f.Name, Desc: f.Description, Backfill: f.Backfill}
	var errs driver.FieldErrors
	add := func(field, value, allowed string) {
		errs = append(errs, &driver.FieldError{Field: field, Value: value, Allowed: allowed, Source: "scenario " + path})
	}
	if sc.Name == "" {
		sc.Name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	env := envMap(opts.Env)

	snap, err := loadConfig(path, &f, env, opts)
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

	// Phases: each one's config changes are checked on top of the ones before, as they
	// will be applied.
	if len(f.Phases) == 0 {
		add("phases", "", "at least one phase")
	}
	store := config.NewStore(snap)
	names := map[string]bool{}
	var at time.Duration
	for i, ps := range f.Phases {
		field := fmt.Sprintf("phases[%d]", i)
		if ps.Name != "" {
			field = "phases." + ps.Name
		}
		if ps.Name == "" || !nameRE.MatchString(ps.Name) {
			add(field+".name", ps.Name, "a name of letters, digits, '_' and '-', starting with a letter")
		} else if names[ps.Name] {
			add(field+".name", ps.Name, "a name no other phase has")
		}
		names[ps.Name] = true
		p := Phase{Name: ps.Name, Start: at, Shapes: map[string]pacer.Shape{}, Load: map[string]string{}}
		switch d := strings.TrimSpace(ps.Duration); {
		case d == "forever" || d == "infinite":
			if i != len(f.Phases)-1 {
				add(field+".duration", d, "a positive duration; forever only for the last phase")
			}
			p.Duration = Forever
		default:
			dur, err := time.ParseDuration(d)
			if err != nil || dur <= 0 {
				add(field+".duration", d, "a positive duration (30s, 5m, 2h), or forever for the last phase")
			}
			p.Duration = dur
		}
		if len(ps.Set) > 0 {
			p.Set = map[string]string{}
			for k, v := range ps.Set {
				s, err := expandVars(scalarText(v), env)
				if err != nil {
					add(field+".set."+k, scalarText(v), err.Error())
					continue
				}
				p.Set[k] = s
			}
			if _, err := store.PatchFrom(config.LayerRuntime, "scenario phase "+ps.Name, p.Set); err != nil {
				if fes, ok := driver.AsFieldErrors(err); ok {
					for _, fe := range fes {
						fe.Field = field + ".set." + fe.Field
						errs = append(errs, fe)
					}
				} else {
					add(field+".set", "", err.Error())
				}
			}
		}
		phaseClasses := store.Current().Config.Workload.ClassNames()
		if ps.Autotune != nil {
			p.Autotune = checkAutotune(field+".autotune", ps, phaseClasses, add, &errs)
			if p.Autotune != nil {
				what := "every enabled class, ratio kept"
				if p.Autotune.Class != "" {
					what = "class " + p.Autotune.Class
				}
				p.Load["auto-tune"] = fmt.Sprintf("search the capacity within %s (%s), then hold it", p.Autotune.Settings.SLA, what)
				if p.Autotune.MinCapacity > 0 {
					p.Load["auto-tune"] += fmt.Sprintf("; the phase fails below %.0f ops/s", p.Autotune.MinCapacity)
				}
			}
		}
		for _, class := range slices.Sorted(maps.Keys(ps.Load)) {
			if !slices.Contains(phaseClasses, class) {
				add(field+".load."+class, class, "op classes of the workload: "+strings.Join(phaseClasses, ", "))
				continue
			}
			shape, text, err := ps.Load[class].shape()
			if err != nil {
				add(field+".load."+class, text, err.Error())
				continue
			}
			p.Shapes[class], p.Load[class] = shape, text
		}
		sc.Phases = append(sc.Phases, p)
		if p.Duration > 0 {
			at += p.Duration
		}
	}

	hooks := map[string]*Hook{}
	for i, hs := range f.Hooks {
		field := fmt.Sprintf("hooks[%d]", i)
		if hs.Name != "" {
			field = "hooks." + hs.Name
		}
		if hs.Name == "" || !nameRE.MatchString(hs.Name) {
			add(field+".name", hs.Name, "a name of letters, digits, '_' and '-', starting with a letter")
		} else if hooks[hs.Name] != nil || names[hs.Name] {
			add(field+".name", hs.Name, "a name no other hook or phase has")
		}
		h := Hook{Name: hs.Name, AtText: hs.At}
		var err error
		if h.Phase, h.At, err = sc.hookTime(hs.At); err != nil {
			add(field+".at", hs.At, err.Error())
		} else if end := sc.End(); end != Forever && h.At > end {
			add(field+".at", hs.At, fmt.Sprintf("a time within the scenario, which ends at %s", end))
		}
		if h.Action, err = hs.ActionSpec.action(env); err != nil {
			add(field, "", err.Error())
		}
		if hs.For != "" {
			if h.For, err = time.ParseDuration(hs.For); err != nil || h.For <= 0 {
				add(field+".for", hs.For, "a positive duration")
			}
			if hs.Undo == nil {
				add(field+".undo", "", "an undo action (run or http) is required with for")
			}
		}
		if hs.Undo != nil {
			if hs.For == "" {
				add(field+".for", "", "a duration is required with undo: how long the fault lasts")
			}
			u, err := hs.Undo.action(env)
			if err != nil {
				add(field+".undo", "", err.Error())
			}
			h.Undo = &u
		}
		sc.Hooks = append(sc.Hooks, h)
		hooks[hs.Name] = &sc.Hooks[len(sc.Hooks)-1]
	}

	for i, ts := range f.Thresholds {
		field := fmt.Sprintf("thresholds[%d]", i)
		t, fes := parseThreshold(ts, field, sc, f.SLA, classAllowed)
		for _, fe := range fes {
			fe.Source = "scenario " + path
		}
		errs = append(errs, fes...)
		if t != nil {
			sc.Thresholds = append(sc.Thresholds, t)
		}
	}
	for class := range f.SLA {
		if !slices.Contains(sc.Classes, class) {
			add("sla."+class, class, classAllowed)
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return sc, nil
}

var nameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

// loadConfig builds the scenario's configuration: defaults, the preset, the config file,
// the environment, the file's config section, then --set.
func loadConfig(path string, f *File, env map[string]string, opts Options) (*config.Snapshot, error) {
	layers := []config.Layer{config.DefaultsLayer()}
	var errs driver.FieldErrors
	if f.Workload != "" {
		l, fes, err := presets.Load(relative(path, f.Workload))
		if err != nil {
			return nil, fmt.Errorf("scenario %s: workload %s: %w", path, f.Workload, err)
		}
		layers, errs = append(layers, l), append(errs, fes...)
	}
	if f.ConfigFile != "" {
		l, fes, err := source.FileLayer(relative(path, f.ConfigFile))
		if err != nil {
			return nil, fmt.Errorf("scenario %s: configFile: %w", path, err)
		}
		layers, errs = append(layers, l), append(errs, fes...)
	}
	el, fes := config.EnvLayer(opts.Env)
	layers, errs = append(layers, el), append(errs, fes...)
	if len(f.Config) > 0 {
		expanded, err := expandAll(f.Config, env)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: config: %w", path, err)
		}
		b, err := yaml.Marshal(expanded)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: config: %w", path, err)
		}
		// A layer of its own name ranks between etcd and the runtime layer: above the
		// preset, the config file and the environment, below --set.
		l := config.Layer{Name: "scenario", Source: "scenario " + path}
		l, fes, err := source.ParseLayer(l, "scenario config", "config.yaml", b)
		if err != nil {
			return nil, fmt.Errorf("scenario %s: %w", path, err)
		}
		layers, errs = append(layers, l), append(errs, fes...)
	}
	sets, fes := config.SetsLayer(opts.Sets)
	layers, errs = append(layers, sets), append(errs, fes...)
	snap, err := config.Build(layers)
	if err != nil {
		fes, ok := driver.AsFieldErrors(err)
		if !ok {
			return nil, err
		}
		errs = append(errs, fes...)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	snap.Version = 1
	return snap, nil
}

func relative(scenario, p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	if _, ok := presets.Lookup(p); ok {
		return p
	}
	return filepath.Join(filepath.Dir(scenario), p)
}

// shape returns the pacer shape and a description; nil for off.
func (s ShapeSpec) shape() (pacer.Shape, string, error) {
	n := 0
	for _, set := range []bool{s.Rate != nil, s.Ramp != nil, s.Steps != nil, s.Sine != nil, s.Off} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, "", fmt.Errorf("exactly one of rate, ramp, steps, sine, off")
	}
	switch {
	case s.Off:
		return nil, "off", nil
	case s.Rate != nil:
		if !(*s.Rate > 0) {
			return nil, fmt.Sprint(*s.Rate), fmt.Errorf("rate: a rate above 0 ops/s")
		}
		return pacer.Constant(*s.Rate), fmt.Sprintf("constant %g ops/s", *s.Rate), nil
	case s.Ramp != nil:
		over, err := time.ParseDuration(s.Ramp.Over)
		if err != nil {
			return nil, s.Ramp.Over, fmt.Errorf("ramp.over: a positive duration")
		}
		r, err := pacer.NewRamp(s.Ramp.From, s.Ramp.To, over)
		if err != nil {
			return nil, "", err
		}
		return r, fmt.Sprintf("ramp %g -> %g ops/s over %s", s.Ramp.From, s.Ramp.To, over), nil
	case s.Steps != nil:
		every, err := time.ParseDuration(s.Steps.Every)
		if err != nil {
			return nil, s.Steps.Every, fmt.Errorf("steps.every: a positive duration")
		}
		st, err := pacer.NewSteps(every, s.Steps.Rates...)
		if err != nil {
			return nil, "", err
		}
		return st, fmt.Sprintf("steps %v ops/s every %s", s.Steps.Rates, every), nil
	default:
		period, err := time.ParseDuration(s.Sine.Period)
		if err != nil {
			return nil, s.Sine.Period, fmt.Errorf("sine.period: a positive duration")
		}
		sn, err := pacer.NewSine(s.Sine.Mean, s.Sine.Amplitude, period)
		if err != nil {
			return nil, "", err
		}
		return sn, fmt.Sprintf("sine %g ± %g ops/s, period %s", s.Sine.Mean, s.Sine.Amplitude, period), nil
	}
}

// hookTime resolves a hook's At: "PHASE", "PHASE + D", "PHASE end", or "D".
func (sc *Scenario) hookTime(at string) (string, time.Duration, error) {
	phases := make([]string, len(sc.Phases))
	for i, p := range sc.Phases {
		phases[i] = p.Name
	}
	allowed := fmt.Errorf("PHASE, PHASE + DURATION, PHASE end, or a duration from the start; phases: %s", strings.Join(phases, ", "))
	s := strings.TrimSpace(at)
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return "", 0, allowed
		}
		return "", d, nil
	}
	name, rest, _ := strings.Cut(s, " ")
	name, plus, hasPlus := strings.Cut(name, "+")
	rest = strings.TrimSpace(rest)
	if hasPlus {
		rest = "+" + plus + rest
	}
	i := slices.IndexFunc(sc.Phases, func(p Phase) bool { return p.Name == name })
	if i < 0 {
		return "", 0, allowed
	}
	p := sc.Phases[i]
	switch {
	case rest == "":
		return p.Name, p.Start, nil
	case rest == "end":
		if p.Duration == Forever {
			return "", 0, fmt.Errorf("phase %s runs forever: it has no end", p.Name)
		}
		return p.Name, p.Start + p.Duration, nil
	case strings.HasPrefix(rest, "+"):
		d, err := time.ParseDuration(strings.TrimSpace(rest[1:]))
		if err != nil || d < 0 {
			return "", 0, allowed
		}
		if p.Duration != Forever && d > p.Duration {
			return "", 0, fmt.Errorf("%s is after the end of phase %s (%s)", d, p.Name, p.Duration)
		}
		return p.Name, p.Start + d, nil
	}
	return "", 0, allowed
}

func (a ActionSpec) action(env map[string]string) (Action, error) {
	out := Action{Run: a.Run, HTTP: a.HTTP, Timeout: DefaultHookTimeout}
	if (a.Run == "") == (a.HTTP == nil) {
		return out, fmt.Errorf("exactly one of run (a command) or http")
	}
	if a.ExpectExit != nil {
		if a.Run == "" {
			return out, fmt.Errorf("expectExit goes with run")
		}
		out.ExpectExit = *a.ExpectExit
	}
	if a.Timeout != "" {
		d, err := time.ParseDuration(a.Timeout)
		if err != nil || d <= 0 {
			return out, fmt.Errorf("timeout %q: a positive duration", a.Timeout)
		}
		out.Timeout = d
	}
	if h := a.HTTP; h != nil {
		c := *h
		var err error
		if c.URL, err = expandVars(h.URL, env); err != nil {
			return out, fmt.Errorf("http.url: %w", err)
		}
		if c.Body, err = expandVars(h.Body, env); err != nil {
			return out, fmt.Errorf("http.body: %w", err)
		}
		c.Headers = map[string]string{}
		for k, v := range h.Headers {
			if c.Headers[k], err = expandVars(v, env); err != nil {
				return out, fmt.Errorf("http.headers.%s: %w", k, err)
			}
		}
		if !strings.HasPrefix(c.URL, "http://") && !strings.HasPrefix(c.URL, "https://") {
			return out, fmt.Errorf("http.url %q: an http:// or https:// URL", c.URL)
		}
		if c.Method == "" {
			c.Method = "GET"
			if c.Body != "" {
				c.Method = "POST"
			}
		}
		c.Method = strings.ToUpper(c.Method)
		if !slices.Contains([]string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD"}, c.Method) {
			return out, fmt.Errorf("http.method %q: GET, POST, PUT, PATCH, DELETE or HEAD", h.Method)
		}
		if c.ExpectStatus != 0 && (c.ExpectStatus < 100 || c.ExpectStatus > 599) {
			return out, fmt.Errorf("http.expectStatus %d: an HTTP status code", c.ExpectStatus)
		}
		out.HTTP, out.ExpectStatus = &c, c.ExpectStatus
	}
	return out, nil
}

func (a Action) String() string {
	if a.HTTP != nil {
		return a.HTTP.Method + " " + a.HTTP.URL
	}
	return a.Run
}

// envMap turns os.Environ() entries into a map (the last one wins).
func envMap(env []string) map[string]string {
	m := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return m
}

var varRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// expandVars replaces ${NAME} and ${NAME:-default} with the environment's values. Only
// the braced form is expanded, so a shell's $1 or $(...) in a value is left alone. An unset
// variable without a default is an error: a scenario must not silently aim at "".
func expandVars(s string, env map[string]string) (string, error) {
	var missing []string
	out := varRE.ReplaceAllStringFunc(s, func(m string) string {
		g := varRE.FindStringSubmatch(m)
		if v, ok := env[g[1]]; ok && v != "" {
			return v
		}
		if g[2] != "" {
			return g[3]
		}
		missing = append(missing, g[1])
		return m
	})
	if len(missing) > 0 {
		return s, fmt.Errorf("environment variable %s is not set (write ${%s:-default} for a default)", missing[0], missing[0])
	}
	return out, nil
}

// expandAll expands ${VAR} in every string of a decoded YAML tree.
func expandAll(v any, env map[string]string) (any, error) {
	switch t := v.(type) {
	case string:
		return expandVars(t, env)
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			e, err := expandAll(x, env)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			out[k] = e
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			e, err := expandAll(x, env)
			if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return out, nil
	}
	return v, nil
}

// scalarText is a YAML scalar as a config value.
func scalarText(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case nil:
		return ""
	}
	b, _ := yaml.Marshal(v)
	return string(bytes.TrimSpace(b))
}

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

// checkAutotune checks an auto-tune phase: the search's fields (errors named under
// field), its class, and that it has no load of its own (the search sets the load).
func checkAutotune(field string, ps PhaseSpec, classes []string, add func(field, value, allowed string), errs *driver.FieldErrors) *PhaseAutotune {
	a := ps.Autotune
	if len(ps.Load) > 0 {
		add(field, ps.Name, "an auto-tune phase sets the load itself: give it no load (phase "+ps.Name+")")
	}
	if a.Class != "" && !slices.Contains(classes, a.Class) {
		add(field+".class", a.Class, "op classes of the workload: "+strings.Join(classes, ", "))
	}
	if a.MinCapacity < 0 {
		add(field+".minCapacity", fmt.Sprint(a.MinCapacity), "ops/s at least 0 (0: any capacity passes)")
	}
	if a.Hold {
		add(field+".hold", "true", "leave it out: an auto-tune phase always holds the rate it found until the phase ends")
	}
	if a.Duration != "" {
		add(field+".duration", string(a.Duration), "leave it out: the phase's duration bounds the search and the hold")
	}
	st, err := a.Spec.Settings()
	if err != nil {
		if fes, ok := driver.AsFieldErrors(err); ok {
			for _, fe := range fes {
				fe.Field = field + "." + fe.Field
				*errs = append(*errs, fe)
			}
		} else {
			add(field, "", err.Error())
		}
		return nil
	}
	st.Hold = true
	return &PhaseAutotune{Settings: st, Class: a.Class, MinCapacity: a.MinCapacity}
}
