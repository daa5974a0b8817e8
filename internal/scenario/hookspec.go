package scenario

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

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

// hooks checks the hooks of a file and adds them to sc; a hook's name must differ from
// every phase's.
func (pa *parsing) hooks(sc *Scenario, specs []HookSpec, phases map[string]bool) {
	hooks := map[string]*Hook{}
	for i, hs := range specs {
		field := fmt.Sprintf("hooks[%d]", i)
		if hs.Name != "" {
			field = "hooks." + hs.Name
		}
		if hs.Name == "" || !nameRE.MatchString(hs.Name) {
			pa.add(field+".name", hs.Name, "a name of letters, digits, '_' and '-', starting with a letter")
		} else if hooks[hs.Name] != nil || phases[hs.Name] {
			pa.add(field+".name", hs.Name, "a name no other hook or phase has")
		}
		h := Hook{Name: hs.Name, AtText: hs.At}
		var err error
		if h.Phase, h.At, err = sc.hookTime(hs.At); err != nil {
			pa.add(field+".at", hs.At, err.Error())
		} else if end := sc.End(); end != Forever && h.At > end {
			pa.add(field+".at", hs.At, fmt.Sprintf("a time within the scenario, which ends at %s", end))
		}
		if h.Action, err = hs.ActionSpec.action(pa.env); err != nil {
			pa.add(field, "", err.Error())
		}
		if hs.For != "" {
			if h.For, err = time.ParseDuration(hs.For); err != nil || h.For <= 0 {
				pa.add(field+".for", hs.For, "a positive duration")
			}
			if hs.Undo == nil {
				pa.add(field+".undo", "", "an undo action (run or http) is required with for")
			}
		}
		if hs.Undo != nil {
			if hs.For == "" {
				pa.add(field+".for", "", "a duration is required with undo: how long the fault lasts")
			}
			u, err := hs.Undo.action(pa.env)
			if err != nil {
				pa.add(field+".undo", "", err.Error())
			}
			h.Undo = &u
		}
		sc.Hooks = append(sc.Hooks, h)
		hooks[hs.Name] = &sc.Hooks[len(sc.Hooks)-1]
	}

}
