package scenario

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/ndbench/ndbench/driver"
	"github.com/ndbench/ndbench/internal/config"
	"github.com/ndbench/ndbench/internal/pacer"
)

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

// phases checks the phases of a file and adds them to sc; each one's config changes are
// checked on top of the ones before, as they will be applied. It returns the phases'
// names.
func (pa *parsing) phases(sc *Scenario, specs []PhaseSpec, snap *config.Snapshot) map[string]bool {
	if len(specs) == 0 {
		pa.add("phases", "", "at least one phase")
	}
	store := config.NewStore(snap)
	names := map[string]bool{}
	var at time.Duration
	for i, ps := range specs {
		field := fmt.Sprintf("phases[%d]", i)
		if ps.Name != "" {
			field = "phases." + ps.Name
		}
		if ps.Name == "" || !nameRE.MatchString(ps.Name) {
			pa.add(field+".name", ps.Name, "a name of letters, digits, '_' and '-', starting with a letter")
		} else if names[ps.Name] {
			pa.add(field+".name", ps.Name, "a name no other phase has")
		}
		names[ps.Name] = true
		p := Phase{Name: ps.Name, Start: at, Shapes: map[string]pacer.Shape{}, Load: map[string]string{}}
		switch d := strings.TrimSpace(ps.Duration); {
		case d == "forever" || d == "infinite":
			if i != len(specs)-1 {
				pa.add(field+".duration", d, "a positive duration; forever only for the last phase")
			}
			p.Duration = Forever
		default:
			dur, err := time.ParseDuration(d)
			if err != nil || dur <= 0 {
				pa.add(field+".duration", d, "a positive duration (30s, 5m, 2h), or forever for the last phase")
			}
			p.Duration = dur
		}
		if len(ps.Set) > 0 {
			p.Set = map[string]string{}
			for k, v := range ps.Set {
				s, err := expandVars(scalarText(v), pa.env)
				if err != nil {
					pa.add(field+".set."+k, scalarText(v), err.Error())
					continue
				}
				p.Set[k] = s
			}
			if _, err := store.PatchFrom(config.LayerRuntime, "scenario phase "+ps.Name, p.Set); err != nil {
				if fes, ok := driver.AsFieldErrors(err); ok {
					for _, fe := range fes {
						fe.Field = field + ".set." + fe.Field
						pa.errs = append(pa.errs, fe)
					}
				} else {
					pa.add(field+".set", "", err.Error())
				}
			}
		}
		phaseClasses := store.Current().Config.Workload.ClassNames()
		if ps.Autotune != nil {
			p.Autotune = checkAutotune(field+".autotune", ps, phaseClasses, pa.add, &pa.errs)
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
				pa.add(field+".load."+class, class, "op classes of the workload: "+strings.Join(phaseClasses, ", "))
				continue
			}
			shape, text, err := ps.Load[class].shape()
			if err != nil {
				pa.add(field+".load."+class, text, err.Error())
				continue
			}
			p.Shapes[class], p.Load[class] = shape, text
		}
		sc.Phases = append(sc.Phases, p)
		if p.Duration > 0 {
			at += p.Duration
		}
	}

	return names
}
