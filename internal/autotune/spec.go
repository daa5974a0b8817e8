package autotune

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/ndbench/ndbench/driver"
)

// Spec is a capacity search as a client or a file asks for it: the body of POST
// /api/v1/autotune and a scenario's autotune phase (docs/autotune.md). Every field is
// optional and takes the CLI's default.
type Spec struct {
	Class       string  `json:"class,omitempty" doc:"Tune this op class only; default every enabled class with a rate, ratio kept"`
	Percentile  float64 `json:"percentile,omitempty" doc:"Response-time percentile the SLA bounds; default 99"`
	Latency     Text    `json:"latency,omitempty" doc:"Bound on that percentile (a duration); default 10ms"`
	MaxErrors   Text    `json:"maxErrors,omitempty" doc:"Bound on failed/attempted (ratio or percentage); default 1%"`
	MinAchieved Text    `json:"minAchieved,omitempty" doc:"Least achieved/target (ratio or percentage); default 97%"`
	// SLA has per-class fields: {"write": {"latency": "20ms"}}.
	SLA       map[string]map[string]Text `json:"sla,omitempty" doc:"A class's own SLA fields (percentile, latency, errors, achieved)"`
	Start     float64                    `json:"start,omitempty" doc:"First total rate in ops/s; default the configured total, at least 1000"`
	MaxRate   float64                    `json:"maxRate,omitempty" doc:"Highest total rate tried; default 10M"`
	Tolerance Text                       `json:"tolerance,omitempty" doc:"Bisection ends at hi/lo <= 1+tolerance; default 2%"`
	Settle    Text                       `json:"settle,omitempty" doc:"Settle period of each step; default 2s, 0s for none"`
	Window    Text                       `json:"window,omitempty" doc:"Least measuring window; default 5s"`
	Confirm   Text                       `json:"confirm,omitempty" doc:"Least confirmation window; default three windows"`
	Hold      bool                       `json:"hold,omitempty" doc:"Hold the highest rate within SLA afterwards (AIMD)"`
	Duration  Text                       `json:"duration,omitempty" doc:"With hold: how long; default until stopped"`
}

// Text is a spec field as it was written: "2%", "10ms", or a plain number (0.02). JSON
// and YAML numbers are taken as their text, so a scenario's `minAchieved: 0.8` means what
// `minAchieved: "0.8"` does, rather than failing to decode with a message about Go
// types; the field's own parser then checks the value and names the field.
type Text string

// UnmarshalJSON takes a JSON string, or a number as its text.
func (t *Text) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*t = Text(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("invalid value %s; allowed: a string such as \"2%%\" or \"10ms\", or a number", b)
	}
	*t = Text(n)
	return nil
}

// Settings turns a spec into search settings; errors are driver.FieldErrors naming the
// spec's field.
func (r Spec) Settings() (Settings, error) {
	s := Settings{SLA: DefaultSLA, Start: r.Start, MaxRate: r.MaxRate, Hold: r.Hold}
	field := func(name string, f func() error) error {
		if err := f(); err != nil {
			return &driver.FieldError{Field: name, Value: fmt.Sprint(err), Allowed: "a ratio (0.02) or a percentage (2%)"}
		}
		return nil
	}
	if r.Percentile != 0 {
		s.SLA.Percentile = r.Percentile
	}
	// The request's fields, with the SLA field each sets: an error names the field the
	// client sent (maxErrors), not the SLA's own name for it (errors).
	for _, f := range []struct{ field, sla, v string }{
		{"latency", "latency", string(r.Latency)}, {"maxErrors", "errors", string(r.MaxErrors)}, {"minAchieved", "achieved", string(r.MinAchieved)},
	} {
		if f.v != "" {
			if err := s.SLA.SetField(f.sla, f.v); err != nil {
				return s, &driver.FieldError{Field: f.field, Value: f.v, Allowed: allowedOf(err)}
			}
		}
	}
	for class, fields := range r.SLA {
		if s.Classes == nil {
			s.Classes = map[string]SLA{}
		}
		sla := s.SLA
		for k, v := range fields {
			if err := sla.SetField(k, string(v)); err != nil {
				return s, &driver.FieldError{Field: "sla." + class + "." + k, Value: string(v), Allowed: allowedOf(err)}
			}
		}
		s.Classes[class] = sla
	}
	if r.Tolerance != "" {
		if err := field("tolerance", func() (err error) { s.Tolerance, err = ParseRatio(string(r.Tolerance)); return }); err != nil {
			return s, err
		}
	}
	for name, d := range map[string]struct {
		v   string
		dst *time.Duration
	}{"settle": {string(r.Settle), &s.Settle}, "window": {string(r.Window), &s.Window}, "confirm": {string(r.Confirm), &s.Confirm}, "duration": {string(r.Duration), &s.HoldFor}} {
		if d.v == "" {
			continue
		}
		v, err := time.ParseDuration(d.v)
		if err != nil {
			return s, &driver.FieldError{Field: name, Value: d.v, Allowed: "a duration, e.g. 5s"}
		}
		if v == 0 && name == "settle" {
			v = NoSettle
		}
		*d.dst = v
	}
	if err := s.WithDefaults().Validate(); err != nil {
		return s, validationField(err)
	}
	return s, nil
}

// allowedOf is what an error of SLA.SetField says is allowed, without the field and value
// it starts with, which the field error states already.
func allowedOf(err error) string {
	if _, allowed, ok := strings.Cut(err.Error(), "; allowed: "); ok {
		return allowed
	}
	return err.Error()
}

// validationField turns a settings validation error ("max-rate: invalid value 0; allowed:
// ...", the form every check of Settings.Validate uses) into a field error naming
// the request's field (maxRate), so a client can mark the control it came from. An error of
// another form, or of a class's SLA, stays on the request body.
func validationField(err error) *driver.FieldError {
	msg := err.Error()
	name, rest, ok := strings.Cut(msg, ": invalid value ")
	value, allowed, ok2 := strings.Cut(rest, "; allowed: ")
	if !ok || !ok2 || strings.ContainsAny(name, " .") {
		return &driver.FieldError{Field: "body", Allowed: msg}
	}
	// The CLI's flag names are kebab-case; the request's fields camelCase.
	if head, tail, dash := strings.Cut(name, "-"); dash && tail != "" {
		name = head + strings.ToUpper(tail[:1]) + tail[1:]
	}
	return &driver.FieldError{Field: name, Value: value, Allowed: allowed}
}

// DefaultStart is the first rate of a search that gives none: the tuned classes'
// configured total, at least 1000 ops/s (lower rates need long windows for a p99).
func DefaultStart(n Node, p *NodeProber) float64 {
	total := 0.0
	w := n.Config().Config.Workload
	for c := range p.Classes() {
		spec, _ := w.Class(c)
		total += spec.Rate
	}
	return max(1000, total)
}
