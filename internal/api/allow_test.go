package api

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	_ "github.com/ndbench/ndbench/drivers/http"
	_ "github.com/ndbench/ndbench/drivers/pebble"
	_ "github.com/ndbench/ndbench/drivers/script"
	"github.com/ndbench/ndbench/internal/config"
)

// memoryScript is a script that touches nothing beyond the process: it stores in the
// bundled memory driver.
const memoryScript = `var db;
function init(config) { db = stores.open("memory", {}); }
function read(key) { return db.read(key); }
function write(key, value) { db.write(key, value); }`

// TestAPICapabilities holds the bar of `serve --allow`: from the API (a PATCH of the
// configuration, a driver init, which the UI's driver form posts, and a fleet
// coordinator's push, which is a PATCH), a script, a filesystem path and an http target
// outside the allow-list are refused with 403 naming the key and the flag that would
// allow it, and applied when the server was started with that flag. What the command line
// set stays usable, and a change that touches no such option is unaffected.
func TestAPICapabilities(t *testing.T) {
	type call struct {
		method, path string
		body         any
	}
	patch := func(k, v string) call {
		return call{"PATCH", "/api/v1/config", map[string]any{"values": map[string]string{k: v}}}
	}
	initDriver := func(name string, opts map[string]string) call {
		return call{"POST", "/api/v1/driver/init", map[string]any{"driver": name, "options": opts}}
	}
	tests := []struct {
		name  string
		sets  []string // the command line
		allow config.Allow
		call  call
		field string // the refused key; "" = accepted
		flag  string
	}{
		{name: "script source by PATCH", call: patch("drivers.script.source", memoryScript),
			field: "drivers.script.source", flag: "--allow=script"},
		{name: "script source by driver init (the UI's form)", call: initDriver("script", map[string]string{"source": memoryScript}),
			field: "drivers.script.source", flag: "--allow=script"},
		{name: "script file by driver init", call: initDriver("script", map[string]string{"file": "/tmp/x.js"}),
			field: "drivers.script.file", flag: "--allow=script,paths"},
		{name: "script allowed", allow: config.Allow{Script: true}, call: initDriver("script", map[string]string{"source": memoryScript})},
		{name: "script from the command line", sets: []string{"drivers.script.source=" + memoryScript}, call: initDriver("script", nil)},
		{name: "pebble path by PATCH", call: patch("drivers.pebble.path", "/var/lib/other"),
			field: "drivers.pebble.path", flag: "--allow=paths"},
		{name: "path of a composition's child", call: patch("drivers.pebble@cold.path", "/etc"),
			field: "drivers.pebble@cold.path", flag: "--allow=paths"},
		{name: "pebble path by driver init", call: initDriver("pebble", map[string]string{"path": "/var/lib/other"}),
			field: "drivers.pebble.path", flag: "--allow=paths"},
		{name: "path under a key in another case", call: patch("Drivers.Pebble.PATH", "/var/lib/other"),
			field: "drivers.pebble.path", flag: "--allow=paths"},
		{name: "TLS file by driver init, option in another case", call: initDriver("http", map[string]string{"TLSCAFILE": "/etc/ssl/private/ca.pem"}),
			field: "drivers.http.tlsCAFile", flag: "--allow=paths"},
		{name: "path allowed", allow: config.Allow{Paths: true}, call: patch("drivers.pebble.path", "/var/lib/other")},
		{name: "path from the command line, posted back", sets: []string{"drivers.pebble.path=/data/bench"}, call: patch("drivers.pebble.path", "/data/bench")},
		{name: "http target outside the allow-list", call: patch("drivers.http.url", "http://169.254.169.254/latest/meta-data"),
			field: "drivers.http.url", flag: "--allow=http-targets"},
		{name: "http request line to another host", sets: []string{"drivers.http.url=http://svc.internal:8080"}, call: patch("drivers.http.read", "GET http://10.1.2.3:2379/v3/kv/{key}"),
			field: "drivers.http.read", flag: "--allow=http-targets"},
		{name: "http target the command line named", sets: []string{"drivers.http.url=http://svc.internal:8080"}, call: patch("drivers.http.url", "http://svc.internal:8080/v2")},
		{name: "http target on --allow-targets", allow: config.Allow{TargetHosts: []string{"api.example.com:443"}}, call: patch("drivers.http.url", "https://api.example.com")},
		{name: "any http target allowed", allow: config.Allow{Targets: true}, call: patch("drivers.http.url", "http://169.254.169.254")},
		{name: "a change touching no gated option", call: patch("workload.readRate", "250")},
		{name: "the store's own address", call: patch("drivers.memory.shards", "4")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, tt.sets...)
			e.inst.Store().SetAllow(tt.allow)
			before := e.inst.Config().Version
			st, body := e.call(tt.call.method, tt.call.path, tt.call.body)
			if tt.field == "" {
				if st != http.StatusOK {
					t.Fatalf("status %d, want 200; body %s", st, body)
				}
				return
			}
			if st != http.StatusForbidden {
				t.Fatalf("status %d, want 403; body %s", st, body)
			}
			var p Problem
			if err := json.Unmarshal(body, &p); err != nil {
				t.Fatal(err)
			}
			if len(p.Fields) != 1 || p.Fields[0].Field != tt.field || !strings.Contains(p.Fields[0].Allowed, "ndbench serve "+tt.flag) {
				t.Errorf("fields %+v, want one for %s naming ndbench serve %s", p.Fields, tt.field, tt.flag)
			}
			if !strings.Contains(p.Detail, tt.flag) {
				t.Errorf("detail %q does not name %s", p.Detail, tt.flag)
			}
			if strings.Contains(string(body), "stores.open") {
				t.Errorf("the refusal echoes the script: %s", body)
			}
			if v := e.inst.Config().Version; v != before {
				t.Errorf("config version %d -> %d: a refused change applied", before, v)
			}
			if e.inst.Status().Initialized {
				t.Errorf("a driver was connected")
			}
		})
	}
}

// TestNDBenchConfigSetNeedsTheAllow: NDBench's config/set is API input like PATCH: a path
// it sets is refused (NDBench's 4xx body) naming the flag, and nothing applies.
func TestNDBenchConfigSetNeedsTheAllow(t *testing.T) {
	e := newEnv(t)
	before := e.inst.Config().Version
	st, body := e.call("POST", "/REST/ndbench/config/set", `{"drivers.pebble.path": "/var/lib/other"}`)
	if st < 400 || st >= 500 || !strings.Contains(string(body), "ndbench serve --allow=paths") {
		t.Fatalf("config/set of a path: %d %s; want a 4xx naming --allow=paths", st, body)
	}
	if v := e.inst.Config().Version; v != before {
		t.Errorf("config version %d -> %d: a refused change applied", before, v)
	}
}
