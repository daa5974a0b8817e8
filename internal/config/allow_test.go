package config

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ndbench/ndbench/driver"
)

// fakeReachOptions has one option of each kind the API gate checks.
type fakeReachOptions struct {
	Path    string `opt:"path" alias:"dir" default:"" reach:"path" help:"a directory"`
	Script  string `opt:"source" default:"" reach:"script" help:"code"`
	URL     string `opt:"url" default:"http://127.0.0.1:8080" reach:"target" help:"base URL"`
	Request string `opt:"read" default:"GET /kv/{key}" reach:"target" help:"request line"`
	Rate    int    `opt:"rate" default:"1" help:"not gated"`
}

func init() {
	driver.MustRegister(driver.Definition{Name: "fake-reach", Summary: "test", New: newFake,
		NewOptions: func() any { return &fakeReachOptions{} }})
}

// TestAPIChangesNeedTheOperatorsAllow: a change from the API that sets a path, a script
// or a target outside the allow-list is refused, naming the key and the flag that would
// allow it, and applies nothing; the command line's own values, unchanged values, a
// change touching no gated option and trusted sources are unaffected.
func TestAPIChangesNeedTheOperatorsAllow(t *testing.T) {
	const p = "drivers.fake-reach."
	tests := []struct {
		name   string
		sets   []string // the command line
		allow  Allow
		origin string
		values map[string]string
		flag   string // in the refusal; "" = accepted
		field  string // the refused key, when not the only key of values
	}{
		{name: "path from the API", values: map[string]string{p + "path": "/etc"}, flag: "--allow=paths"},
		{name: "path by its alias", values: map[string]string{p + "dir": "/etc"}, flag: "--allow=paths", field: p + "path"},
		{name: "path allowed", allow: Allow{Paths: true}, values: map[string]string{p + "path": "/etc"}},
		{name: "path the command line gave, posted back", sets: []string{p + "path=/data"}, values: map[string]string{p + "path": "/data"}},
		{name: "another path than the command line's", sets: []string{p + "path=/data"}, values: map[string]string{p + "path": "/etc"}, flag: "--allow=paths"},
		{name: "empty path (a temporary directory)", values: map[string]string{p + "path": ""}},
		{name: "path from a trusted source", origin: "-", values: map[string]string{p + "path": "/etc"}},
		{name: "script from the API", values: map[string]string{p + "source": "function read(k) {}"}, flag: "--allow=script"},
		{name: "script allowed", allow: Allow{Script: true}, values: map[string]string{p + "source": "x"}},
		{name: "script allowed does not allow paths", allow: Allow{Script: true}, values: map[string]string{p + "path": "/etc"}, flag: "--allow=paths"},
		{name: "target outside the allow-list", values: map[string]string{p + "url": "http://169.254.169.254/latest"}, flag: "--allow=http-targets"},
		{name: "target the command line named", sets: []string{p + "url=http://svc.internal:8080"}, values: map[string]string{p + "url": "http://svc.internal:8080/v2"}},
		{name: "other port of the command line's host", sets: []string{p + "url=http://svc.internal:8080"}, values: map[string]string{p + "url": "http://svc.internal:22"}, flag: "--allow-targets"},
		{name: "target on --allow-targets", allow: Allow{TargetHosts: []string{"api.example.com:443"}}, values: map[string]string{p + "url": "https://API.example.com/"}},
		{name: "host on --allow-targets, any port", allow: Allow{TargetHosts: []string{"api.example.com"}}, values: map[string]string{p + "url": "http://api.example.com:9000"}},
		{name: "any target allowed", allow: Allow{Targets: true}, values: map[string]string{p + "url": "http://169.254.169.254"}},
		{name: "the default target", values: map[string]string{p + "url": "http://127.0.0.1:8080"}},
		{name: "relative request line", values: map[string]string{p + "read": "POST /search?q={key}"}},
		{name: "absolute request line elsewhere", values: map[string]string{p + "read": "GET http://10.0.0.9:2379/v3/kv/range"}, flag: "--allow=http-targets"},
		{name: "absolute request line to the command line's host", sets: []string{p + "url=http://svc:80"}, values: map[string]string{p + "read": "GET http://svc/kv/{key}"}},
		{name: "a target whose host cannot be read", values: map[string]string{p + "url": "unix:///var/run/docker.sock"}, flag: "--allow=http-targets"},
		{name: "no gated option", values: map[string]string{p + "rate": "5", "workload.readRate": "7"}},
		{name: "gated and ungated in one change", values: map[string]string{"workload.readRate": "7", p + "path": "/etc"}, flag: "--allow=paths", field: p + "path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := NewStore(mustLoad(t, Sources{Env: []string{"NDBENCH_DRIVER_NAME=fake-reach"}, Sets: tt.sets}))
			s.SetAllow(tt.allow)
			origin := OriginAPI
			if tt.origin == "-" {
				origin = ""
			}
			before := s.Current()
			_, perr := s.PreviewFrom(LayerRuntime, origin, tt.values)
			_, err := s.PatchFrom(LayerRuntime, origin, tt.values)
			if tt.flag == "" {
				if err != nil || perr != nil {
					t.Fatalf("refused: %v (preview: %v)", err, perr)
				}
				return
			}
			if perr == nil {
				t.Errorf("Preview accepted what Patch must refuse")
			}
			var na *NotAllowedError
			if !errors.As(err, &na) {
				t.Fatalf("error %v (%T), want a NotAllowedError", err, err)
			}
			if !strings.Contains(err.Error(), tt.flag) {
				t.Errorf("error %q does not name %s", err, tt.flag)
			}
			field := tt.field
			if field == "" {
				for k := range tt.values {
					field = k
				}
			}
			fes, ok := driver.AsFieldErrors(err)
			if !ok || len(fes) != 1 || fes[0].Field != field || fes[0].Source != "api" {
				t.Errorf("field errors %v, want one for %s from api", fes, field)
			}
			if s.Current() != before {
				t.Errorf("a refused change applied (version %d -> %d)", before.Version, s.Current().Version)
			}
		})
	}
}

// TestRefusedScriptIsNotEchoed: the refusal of a script does not repeat the code.
func TestRefusedScriptIsNotEchoed(t *testing.T) {
	s := NewStore(mustLoad(t, Sources{Env: []string{"NDBENCH_DRIVER_NAME=fake-reach"}}))
	_, err := s.PatchFrom(LayerRuntime, OriginAPI, map[string]string{"drivers.fake-reach.source": "http.get('http://x/' + secretThing)"})
	if err == nil || strings.Contains(err.Error(), "secretThing") {
		t.Fatalf("error %v: want a refusal without the script", err)
	}
}

func TestParseAllow(t *testing.T) {
	tests := []struct {
		caps, targets []string
		want          Allow
		err           string
	}{
		{want: Allow{}},
		{caps: []string{"script,paths"}, want: Allow{Script: true, Paths: true}},
		{caps: []string{"http-targets", "PATHS"}, want: Allow{Targets: true, Paths: true}},
		{targets: []string{"api.example.com:443,10.0.0.5", "[::1]:80"}, want: Allow{TargetHosts: []string{"api.example.com:443", "10.0.0.5", "[::1]:80"}}},
		{caps: []string{"shell"}, err: `--allow: unknown capability "shell"; allowed: script, http-targets, paths`},
		{targets: []string{"http://{x}/"}, err: "--allow-targets: invalid value"},
	}
	for _, tt := range tests {
		got, err := ParseAllow(tt.caps, tt.targets)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("ParseAllow(%q, %q) error %v, want %q", tt.caps, tt.targets, err, tt.err)
			}
			continue
		}
		if err != nil || got.Script != tt.want.Script || got.Paths != tt.want.Paths || got.Targets != tt.want.Targets || !slices.Equal(got.TargetHosts, tt.want.TargetHosts) {
			t.Errorf("ParseAllow(%q, %q) = %+v, %v; want %+v", tt.caps, tt.targets, got, err, tt.want)
		}
	}
}

func TestTargetHosts(t *testing.T) {
	tests := []struct {
		value string
		want  []string
		ok    bool
	}{
		{"http://Svc:8080/x", []string{"svc:8080"}, true},
		{"http://svc/x", []string{"svc:80"}, true},
		{"https://svc", []string{"svc:443"}, true},
		{"https://user@svc:1/", []string{"svc:1"}, true},
		{"127.0.0.1:50051", []string{"127.0.0.1:50051"}, true},
		{"dns:///svc.ns:50051", []string{"svc.ns:50051"}, true},
		{"dns://8.8.8.8/svc:1", []string{"svc:1"}, true},
		{"GET /kv/{key}", nil, true},
		{"POST http://10.0.0.1:9/x?q={key}", []string{"10.0.0.1:9"}, true},
		{"http://[::1]:80/", []string{"[::1]:80"}, true},
		{"unix:///run/x.sock", nil, false},
		{"", nil, true},
	}
	for _, tt := range tests {
		got, ok := targetHosts(tt.value)
		if ok != tt.ok || ok && !slices.Equal(got, tt.want) {
			t.Errorf("targetHosts(%q) = %q, %v; want %q, %v", tt.value, got, ok, tt.want, tt.ok)
		}
	}
}
