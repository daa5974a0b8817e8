package config

import (
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/ndbench/ndbench/driver"
)

// OriginAPI labels the values a change from the REST API, the UI or a fleet coordinator
// sets (Store.PatchFrom, Store.PreviewFrom). Such a change is untrusted: the options it
// sets that reach beyond the configured store pass the store's Allow first.
const OriginAPI = "api"

// The capabilities of `serve --allow`, as the operator writes them.
const (
	AllowScript      = "script"
	AllowHTTPTargets = "http-targets"
	AllowPaths       = "paths"
)

// allowNames are the values --allow accepts, in the order they are listed.
var allowNames = []string{AllowScript, AllowHTTPTargets, AllowPaths}

// Allow is what an operator lets untrusted callers (OriginAPI) set, beyond the
// configured store. The zero value allows nothing: a server started without --allow keeps
// API callers from running code, reading or writing files and sending requests to hosts
// the command line did not name. What the command line, the files it names, the
// environment and etcd set is trusted and never checked.
type Allow struct {
	// Script lets the API set a script (drivers.script.source or file): code that runs
	// with everything a script may do, HTTP to any URL and stores.open of any driver.
	Script bool
	// Paths lets the API set options naming files or directories (a pebble path, TLS
	// files, gRPC descriptor files).
	Paths bool
	// Targets lets the API send an HTTP or gRPC driver to any host.
	Targets bool
	// TargetHosts are more hosts (host:port, or host for any port) the API may send an
	// HTTP or gRPC driver to, besides those the trusted configuration names.
	TargetHosts []string
}

// AllowAll is the Allow of a store that no API feeds (`ndbench run`, `scenario run`,
// `autotune`): every change it gets comes from the command line or a file named on it,
// scenario phases and auto-tune steps included, and is the operator's.
func AllowAll() Allow { return Allow{Script: true, Paths: true, Targets: true} }

// ParseAllow reads the values of --allow (each may hold several, comma-separated) and
// --allow-targets. An unknown capability is an error naming the allowed ones.
func ParseAllow(caps, targets []string) (Allow, error) {
	var a Allow
	for _, c := range caps {
		for _, v := range strings.Split(c, ",") {
			switch strings.ToLower(strings.TrimSpace(v)) {
			case "":
			case AllowScript:
				a.Script = true
			case AllowHTTPTargets:
				a.Targets = true
			case AllowPaths:
				a.Paths = true
			default:
				return Allow{}, fmt.Errorf("--allow: unknown capability %q; allowed: %s", v, strings.Join(allowNames, ", "))
			}
		}
	}
	for _, t := range targets {
		for _, v := range strings.Split(t, ",") {
			if v = strings.TrimSpace(v); v == "" {
				continue
			}
			hosts, ok := targetHosts(v)
			if !ok || len(hosts) != 1 {
				return Allow{}, fmt.Errorf("--allow-targets: invalid value %q; allowed: host:port or host (any port), comma-separated", v)
			}
			a.TargetHosts = append(a.TargetHosts, hosts[0])
		}
	}
	return a, nil
}

// NotAllowedError is a change from an untrusted caller that sets options its server's
// operator did not allow it to (see Allow). Fields name each key, and the flag that would
// allow it.
type NotAllowedError struct {
	Fields driver.FieldErrors
}

// Error lists the refused keys.
func (e *NotAllowedError) Error() string {
	return "not allowed from the API: " + e.Fields.Error()
}

// Unwrap gives the field errors, so callers that only know field errors still name keys.
func (e *NotAllowedError) Unwrap() error { return e.Fields }

// SetAllow sets what untrusted changes may reach beyond the configured store. A server
// sets it once at start, before it serves.
func (s *Store) SetAllow(a Allow) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.allow = a
}

// gate refuses what an untrusted change (old to next) sets beyond the store that the
// operator did not allow. The caller holds s.mu. Only keys whose value changed and whose
// effective value came from the API are checked: a value the command line gave, or the
// option's default, is the operator's and passes as it is, also when the UI posts it back.
func (s *Store) gate(old, next *Snapshot) error {
	var errs driver.FieldErrors
	var trusted []string // target hosts of the trusted configuration, found on first need
	trustedDone := false
	for _, key := range diff(old.values, next.values) {
		o, ok := reachOption(key)
		if !ok {
			continue
		}
		v, has := next.values[key]
		if !has || strings.TrimSpace(v) == "" || v == o.Default {
			continue
		}
		src := next.source(key)
		if !fromAPI(src) {
			continue
		}
		// One error per key, naming every capability it lacks (a script file is code and
		// a path: --allow=script,paths).
		var lack, why []string
		for _, kind := range o.Reach {
			switch kind {
			case driver.ReachScript:
				if !s.allow.Script {
					lack, why = append(lack, AllowScript), append(why, "a script only from the command line")
				}
			case driver.ReachPath:
				if !s.allow.Paths {
					lack, why = append(lack, AllowPaths), append(why, shownTrusted(old, key, o)+", as the command line gave it (a file or directory)")
				}
			case driver.ReachTarget:
				if s.allow.Targets {
					continue
				}
				if !trustedDone {
					trusted, trustedDone = trustedTargets(old, s.allow.TargetHosts), true
				}
				hosts, ok := targetHosts(v)
				inside := ok
				for _, h := range hosts {
					inside = inside && hostAllowed(h, trusted)
				}
				if inside {
					continue
				}
				list := "none"
				if len(trusted) > 0 {
					list = strings.Join(trusted, ", ")
				}
				lack, why = append(lack, AllowHTTPTargets), append(why, "a target on the allow-list ("+list+"; add one with --allow-targets host:port)")
			}
		}
		if len(lack) == 0 {
			continue
		}
		shown := Redact(key, v)
		if slices.Contains(o.Reach, driver.ReachScript) && o.Type == "string" && !slices.Contains(o.Reach, driver.ReachPath) {
			// The script itself is not echoed: it may be long, and it is code.
			shown = "(script)"
		}
		errs = append(errs, &driver.FieldError{Field: key, Value: shown, Source: src,
			Allowed: fmt.Sprintf("%s: start the server with `ndbench serve --allow=%s` to let API callers set it",
				strings.Join(why, "; "), strings.Join(lack, ","))})
	}
	if len(errs) > 0 {
		sortErrors(errs)
		return &NotAllowedError{Fields: errs}
	}
	return nil
}

// fromAPI says whether an effective value's source is an untrusted change.
func fromAPI(source string) bool {
	return source == OriginAPI || strings.HasPrefix(source, OriginAPI+" as ")
}

// source returns the source of key's effective value in s.
func (s *Snapshot) source(key string) string {
	_, src, _ := s.Value(key)
	return src
}

// shownTrusted is the value of key the trusted configuration gives, as an error shows it.
func shownTrusted(old *Snapshot, key string, o driver.Option) string {
	v, src, ok := old.Value(key)
	if !ok || fromAPI(src) {
		v = o.Default
	}
	if v == "" {
		return "empty"
	}
	return fmt.Sprintf("%q", v)
}

// reachOption returns the option of a driver key (drivers.REF.OPTION, REF a driver or a
// composition's child such as redis@replica) when it reaches beyond the store.
func reachOption(key string) (driver.Option, bool) {
	rest, ok := strings.CutPrefix(key, "drivers.")
	if !ok {
		return driver.Option{}, false
	}
	ref, opt, ok := strings.Cut(rest, ".")
	if !ok {
		return driver.Option{}, false
	}
	name, _ := driver.SplitRef(ref)
	def, ok := driver.Lookup(name)
	if !ok {
		return driver.Option{}, false
	}
	schema, err := driver.Schema(def.NewOptions())
	if err != nil {
		return driver.Option{}, false
	}
	c, ok := driver.Canonical(schema, opt)
	if !ok {
		return driver.Option{}, false
	}
	for _, o := range schema {
		if o.Name == c && len(o.Reach) > 0 {
			return o, true
		}
	}
	return driver.Option{}, false
}

// trustedTargets lists the hosts an untrusted change may send a driver to: extra, and
// those of every target option the trusted configuration (old, without the API's
// values) sets, defaults included.
func trustedTargets(old *Snapshot, extra []string) []string {
	out := slices.Clone(extra)
	for _, e := range old.Entries {
		if fromAPI(e.Source) {
			continue
		}
		o, ok := reachOption(e.Key)
		if !ok || !slices.Contains(o.Reach, driver.ReachTarget) {
			continue
		}
		if hosts, ok := targetHosts(old.values[e.Key]); ok {
			out = append(out, hosts...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// hostAllowed says whether host (host:port) is on list, whose entries are host:port or
// a host alone for any of its ports.
func hostAllowed(host string, list []string) bool {
	name, _, err := net.SplitHostPort(host)
	if err != nil {
		name = host
	}
	for _, a := range list {
		if strings.EqualFold(a, host) || strings.EqualFold(a, name) {
			return true
		}
	}
	return false
}

// errNoHost marks a target value without a host of its own.
var errNoHost = errors.New("no host")

// targetHosts returns the hosts (host:port, lower case) a target option's value sends
// requests to: a URL (http://host:port/..., dns:///host:port), an HTTP request line
// (METHOD URL; a URL starting with / goes to the url option's host, and gives none), or
// host:port; several comma-separated. ok is false when a host cannot be read from it,
// which an untrusted change is then refused for.
func targetHosts(value string) (hosts []string, ok bool) {
	for _, v := range strings.Split(value, ",") {
		h, err := targetHost(strings.TrimSpace(v))
		switch {
		case errors.Is(err, errNoHost):
		case err != nil:
			return hosts, false
		default:
			hosts = append(hosts, h)
		}
	}
	return hosts, true
}

func targetHost(v string) (string, error) {
	if v == "" {
		return "", errNoHost
	}
	if method, rest, ok := strings.Cut(v, " "); ok && !strings.Contains(method, "/") {
		// An HTTP request line: the method, then the URL.
		v = strings.TrimSpace(rest)
		if strings.HasPrefix(v, "/") {
			return "", errNoHost
		}
	}
	port := ""
	if scheme, rest, ok := strings.Cut(v, "://"); ok {
		switch strings.ToLower(scheme) {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
		// gRPC's dns:///host:port and dns://resolver/host:port name the host last.
		if strings.EqualFold(scheme, "dns") {
			if i := strings.LastIndex(rest, "/"); i >= 0 {
				rest = rest[i+1:]
			}
		}
		v, _, _ = strings.Cut(rest, "/")
		v, _, _ = strings.Cut(v, "?")
		if strings.Contains(v, "@") {
			v = v[strings.LastIndex(v, "@")+1:]
		}
	} else if scheme, rest, ok := strings.Cut(v, ":///"); ok && scheme != "" {
		v = rest
	}
	if v == "" || strings.ContainsAny(v, " {}/") {
		return "", fmt.Errorf("no host in %q", v)
	}
	host, p, err := net.SplitHostPort(v)
	if err != nil {
		host, p = strings.Trim(v, "[]"), port
	}
	if host == "" {
		return "", fmt.Errorf("no host in %q", v)
	}
	host = strings.ToLower(host)
	if p == "" {
		return host, nil
	}
	return net.JoinHostPort(host, p), nil
}
